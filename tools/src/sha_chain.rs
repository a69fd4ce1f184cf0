//! A synthetic Groth16 workload: a chain of SHA-256 hashes, sized to a constraint budget.
//!
//! Shared by cuzk's benchmark tools and by the benchmark peers under `bench/peers/` (which
//! include this file with `#[path = ...]`), so that every prover is timed on the very same
//! circuit. It therefore uses no `crate::` paths and depends only on bellpepper(-core) 0.2,
//! ff 0.13, blstrs 0.7 and rand_chacha 0.3.
//!
//! Why SHA-256: Filecoin's PoRep circuit is dominated by SHA-256 and its witness is mostly
//! bits (0/1 scalars); a SHA chain reproduces that profile (sparse A/B/C rows, a witness that
//! is almost all booleans) without needing sector data or production parameters.
//!
//! Layout of the circuit, in synthesis order:
//!  1. 512 witness bits: a random 64-byte preimage (from `seed`), MSB-first per byte, each
//!     with its boolean constraint.
//!  2. `filler` further random witness bits (one boolean constraint each). They exist only to
//!     bring the constraint count up to the target exactly: one SHA-256 link costs ~25k
//!     constraints, far too coarse for small targets.
//!  3. `links` chained hashes: h1 = SHA-256(preimage) (64-byte message: two compressions,
//!     the second over the constant padding block), h(i+1) = SHA-256(h(i)) (32-byte message:
//!     one compression). With `links == 0` the "digest" is the first 32 preimage bytes.
//!  4. The final 256-bit digest packed into two public inputs (`multipack::pack_into_inputs`,
//!     254 bits per scalar), so the proof has 2 public inputs besides the constant ONE.
//!
//! Constraint count (as counted by the ConstraintSystem passed to `synthesize`):
//!     FIXED_CONSTRAINTS (512 + 2) + filler
//!       + FIRST_LINK_CONSTRAINTS (if links >= 1) + (links - 1) * NEXT_LINK_CONSTRAINTS
//! The per-link numbers were measured with a counting constraint system on bellpepper 0.2.1's
//! sha256 gadget, and the unit tests below re-measure them, so a gadget change is caught.
//! Note that a Groth16 prover adds one constraint per public input (3 here, ONE included)
//! on top of that count, so pick targets a little under a power of two.
//!
//! Measured (bellpepper 0.2.1): FIRST_LINK_CONSTRAINTS = 44_874 (64-byte message, two
//! compressions), NEXT_LINK_CONSTRAINTS = 25_244 (32-byte message, one compression). So a
//! target of 2^K - 64 holds 1 hash for K = 16, 9 for K = 18, 40 for 20, 663 for 24, 5316 for 27.
//!
//! `synthesize` is single-threaded (no rayon): provers parallelise across circuits themselves.

// Each including crate uses a different subset of the helpers.
#![allow(dead_code)]

use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::{
    boolean::{AllocatedBit, Boolean},
    Circuit, ConstraintSystem, SynthesisError,
};
use ff::PrimeField;
use rand_chacha::{
    rand_core::{RngCore, SeedableRng},
    ChaCha20Rng,
};

/// Bytes of random preimage fed to the first hash.
pub const PREIMAGE_BYTES: usize = 64;

/// Constraints not depending on the chain length: the 512 preimage bit constraints plus the
/// two packing constraints of the public digest (256 bits in 254-bit chunks).
pub const FIXED_CONSTRAINTS: usize = PREIMAGE_BYTES * 8 + 2;

/// bellpepper 0.2.1 `sha256` over a 64-byte (512-bit) message: two compressions (message
/// block + constant padding block). Measured; checked by `per_link_constants_match_gadget`.
pub const FIRST_LINK_CONSTRAINTS: usize = 44_874;

/// bellpepper 0.2.1 `sha256` over a 32-byte (256-bit) message: one compression whose second
/// half is constant padding. Measured; checked by `per_link_constants_match_gadget`.
pub const NEXT_LINK_CONSTRAINTS: usize = 25_244;

/// The SHA-256 chain circuit. Cheap to construct and clone: it holds the preimage and the
/// sizes only; the filler bits are regenerated from the seed during synthesis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaChain {
    seed: u64,
    preimage: [u8; PREIMAGE_BYTES],
    links: usize,
    filler: usize,
}

impl ShaChain {
    /// A chain of `links` hashes plus `filler` extra witness bits, deterministic in `seed`.
    pub fn new(links: usize, filler: usize, seed: u64) -> Self {
        let mut preimage = [0u8; PREIMAGE_BYTES];
        preimage_rng(seed).fill_bytes(&mut preimage);
        ShaChain {
            seed,
            preimage,
            links,
            filler,
        }
    }

    /// The chain whose constraint count is exactly `target` (as many whole hashes as fit, the
    /// rest filled with witness bits). Targets below `FIXED_CONSTRAINTS` cannot be met: they
    /// give the smallest circuit (no hash, `FIXED_CONSTRAINTS` constraints).
    pub fn with_constraints(target: usize, seed: u64) -> Self {
        let (links, filler) = if target <= FIXED_CONSTRAINTS {
            (0, 0)
        } else if target < FIXED_CONSTRAINTS + FIRST_LINK_CONSTRAINTS {
            (0, target - FIXED_CONSTRAINTS)
        } else {
            let rest = target - FIXED_CONSTRAINTS - FIRST_LINK_CONSTRAINTS;
            (1 + rest / NEXT_LINK_CONSTRAINTS, rest % NEXT_LINK_CONSTRAINTS)
        };
        Self::new(links, filler, seed)
    }

    /// Number of chained SHA-256 hashes.
    pub fn links(&self) -> usize {
        self.links
    }

    /// Number of filler witness bits.
    pub fn filler_bits(&self) -> usize {
        self.filler
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Constraints `synthesize` will enforce (excluding the prover's per-input constraints).
    pub fn num_constraints(&self) -> usize {
        let chain = match self.links {
            0 => 0,
            n => FIRST_LINK_CONSTRAINTS + (n - 1) * NEXT_LINK_CONSTRAINTS,
        };
        FIXED_CONSTRAINTS + self.filler + chain
    }

    /// The final digest, computed natively (what the circuit exposes).
    pub fn digest(&self) -> [u8; 32] {
        if self.links == 0 {
            let mut d = [0u8; 32];
            d.copy_from_slice(&self.preimage[..32]);
            return d;
        }
        let mut d = native::sha256(&self.preimage);
        for _ in 1..self.links {
            d = native::sha256(&d);
        }
        d
    }

    /// The public inputs (without the leading ONE) a verifier needs for this circuit.
    pub fn public_inputs(&self) -> Vec<blstrs::Scalar> {
        multipack::compute_multipacking(&multipack::bytes_to_bits(&self.digest()))
    }
}

/// Preimage and filler bits come from separate ChaCha streams of the same seed, so changing
/// the filler length never changes the preimage (and thus the public digest).
fn preimage_rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn filler_rng(seed: u64) -> ChaCha20Rng {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(1);
    rng
}

/// Allocates the bits of `bytes`, MSB first within each byte (the order the sha256 gadget
/// and `multipack::bytes_to_bits` use).
fn alloc_bytes<F, CS>(cs: &mut CS, bytes: &[u8]) -> Result<Vec<Boolean>, SynthesisError>
where
    F: PrimeField,
    CS: ConstraintSystem<F>,
{
    let mut bits = Vec::with_capacity(bytes.len() * 8);
    for (i, byte) in bytes.iter().enumerate() {
        for j in (0..8).rev() {
            let bit = AllocatedBit::alloc(cs.namespace(|| format!("preimage bit {}", i * 8 + 7 - j)), Some((byte >> j) & 1 == 1))?;
            bits.push(Boolean::from(bit));
        }
    }
    Ok(bits)
}

impl<F: PrimeField> Circuit<F> for ShaChain {
    fn synthesize<CS: ConstraintSystem<F>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let preimage = alloc_bytes(cs, &self.preimage)?;

        // Filler bits draw 64 random bits at a time; unconstrained beyond booleanity, like
        // the many witness bits of PoRep that only feed hashes.
        let mut rng = filler_rng(self.seed);
        let mut word = 0u64;
        for i in 0..self.filler {
            if i % 64 == 0 {
                word = rng.next_u64();
            }
            let value = (word >> (i % 64)) & 1 == 1;
            AllocatedBit::alloc(cs.namespace(|| format!("filler bit {i}")), Some(value))?;
        }

        let mut digest: Vec<Boolean> = preimage[..256].to_vec();
        for i in 0..self.links {
            let input = if i == 0 { &preimage[..] } else { &digest[..] };
            digest = sha256(cs.namespace(|| format!("link {i}")), input)?;
        }

        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

/// Plain SHA-256 (FIPS 180-4), to compute the expected public inputs without pulling another
/// dependency into the crates that include this file.
mod native {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
        0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
        0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
        0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
        0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
        0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];
    const H0: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ];

    fn compress(h: &mut [u32; 8], block: &[u8]) {
        let mut w = [0u32; 64];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = *h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }

    pub(super) fn sha256(msg: &[u8]) -> [u8; 32] {
        let mut padded = msg.to_vec();
        padded.push(0x80);
        while padded.len() % 64 != 56 {
            padded.push(0);
        }
        padded.extend_from_slice(&((msg.len() as u64) * 8).to_be_bytes());
        let mut h = H0;
        for block in padded.chunks_exact(64) {
            compress(&mut h, block);
        }
        let mut out = [0u8; 32];
        for (o, x) in out.chunks_exact_mut(4).zip(h) {
            o.copy_from_slice(&x.to_be_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper::util_cs::bench_cs::BenchCS;
    use bellpepper_core::test_cs::TestConstraintSystem;
    use blstrs::Scalar;

    /// Constraint count by synthesis into a counting-only constraint system (no witness kept).
    fn counted(c: &ShaChain) -> usize {
        let mut cs = BenchCS::<Scalar>::new();
        c.clone().synthesize(&mut cs).unwrap();
        assert_eq!(cs.num_inputs(), 3, "ONE + two packed digest inputs");
        cs.num_constraints()
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn native_sha256_matches_known_vectors() {
        assert_eq!(
            hex(&native::sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&native::sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&native::sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn per_link_constants_match_gadget() {
        let base = counted(&ShaChain::new(0, 0, 1));
        let one = counted(&ShaChain::new(1, 0, 1));
        let two = counted(&ShaChain::new(2, 0, 1));
        let three = counted(&ShaChain::new(3, 0, 1));
        assert_eq!(base, FIXED_CONSTRAINTS);
        assert_eq!(one - base, FIRST_LINK_CONSTRAINTS);
        assert_eq!(two - one, NEXT_LINK_CONSTRAINTS);
        assert_eq!(three - two, NEXT_LINK_CONSTRAINTS);
        assert_eq!(counted(&ShaChain::new(2, 100, 1)), two + 100);
    }

    #[test]
    fn small_chains_are_satisfied_and_match_native_digest() {
        // links 0..=2 covers the no-hash case, the 64-byte first link and a 32-byte link.
        for (links, filler, seed) in [(0, 5, 3), (1, 0, 4), (2, 77, 5)] {
            let c = ShaChain::new(links, filler, seed);
            let mut cs = TestConstraintSystem::<Scalar>::new();
            c.clone().synthesize(&mut cs).unwrap();
            assert!(cs.is_satisfied(), "unsatisfied: {:?}", cs.which_is_unsatisfied());
            assert_eq!(cs.num_constraints(), c.num_constraints());
            let inputs = c.public_inputs();
            assert_eq!(inputs.len(), 2);
            assert!(cs.verify(&inputs), "circuit digest differs from native SHA-256 chain");
            let mut wrong = inputs.clone();
            wrong[0] += Scalar::from(1u64);
            assert!(!cs.verify(&wrong));
        }
    }

    #[test]
    fn with_constraints_hits_target() {
        for target in [(1usize << 16) - 64, (1 << 18) - 64, (1 << 20) - 64, 100_000, 47_000] {
            let c = ShaChain::with_constraints(target, 1);
            let n = counted(&c);
            assert_eq!(n, c.num_constraints());
            assert!(n <= target && n * 100 >= target * 97, "target {target}: {n} constraints");
            // Mostly hashes, not filler, once a target holds a few links.
            if target >= 1 << 18 {
                assert!(c.filler_bits() < NEXT_LINK_CONSTRAINTS && c.links() >= 9);
            }
        }
        // Too small a target saturates at the fixed part.
        assert_eq!(ShaChain::with_constraints(10, 1).num_constraints(), FIXED_CONSTRAINTS);
    }

    #[test]
    fn deterministic_in_target_and_seed() {
        let a = ShaChain::with_constraints(200_000, 9);
        assert_eq!(a, ShaChain::with_constraints(200_000, 9));
        assert_ne!(a.public_inputs(), ShaChain::with_constraints(200_000, 10).public_inputs());
        // The filler length does not change the digest.
        assert_eq!(ShaChain::new(2, 0, 9).public_inputs(), ShaChain::new(2, 999, 9).public_inputs());
    }
}
