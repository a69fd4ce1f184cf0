//! The proof kinds the engine proves: each turns its caller's input (filecoin-ffi's arguments)
//! into checked partition circuits of filecoin-proofs, names their circuit identity and
//! proving key, and verifies its proofs with filecoin-proofs' own verifier. PoRep C2 today.

pub mod porep;
