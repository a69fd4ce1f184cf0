//! Benchmark workloads shared with the peers under bench/peers/ (which include these files by
//! path, so that every prover is timed on the same circuit).

pub mod sha_chain;
