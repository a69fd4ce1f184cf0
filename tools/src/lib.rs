//! cuzk's test and benchmark tools, kept out of the shipped crate: fixtures made with
//! filecoin-proofs (random-setup parameters, freshly sealed sectors, PoSt and SnapDeals vanilla
//! proofs), the bellperson oracles for PoSt and update proofs, test circuits and synthetic proving keys, and the SHA-256
//! chain workload the peers under bench/peers/ prove too. The binaries `cuzk-fixtures` and
//! `cuzk-bench` are built on them.
//!
//! It reaches the engine's internals through cuzk's private `internals` feature; the shipped
//! library is built without it.

pub mod circuits;
pub mod fixtures;
pub mod memory;
pub mod params_file;
pub mod post_oracle;
pub mod setup;
pub mod sha_chain;
pub mod update_oracle;
