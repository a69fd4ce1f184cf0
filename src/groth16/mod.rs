//! Groth16 around the backends: proving keys (`params`) and the assembly of a proof from its
//! MSM results (`assembly`). Verification is filecoin-proofs' own, per proof kind.

mod assembly;
mod params;

pub use assembly::{assemble, check_key_fits, MsmResults, QueryLayout};
#[cfg(all(test, feature = "internals"))]
pub(crate) use params::repeating_test_key;
pub use params::{HostCopyHandle, ProvingKey, QuerySizes};
