//! Checks that a bellperson-format key file fits the SHA-chain circuit before supraseal-c2
//! sees it. supraseal-c2 only checks that the file is self-consistent; a key for another
//! circuit trips C `assert`s in groth16_cuda.cu (an abort) or mis-sizes the FFT domain. Here
//! a mismatch becomes an error message naming the differing section.

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom},
    path::Path,
};

use anyhow::{bail, Context, Result};
use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::sha_chain::ShaChain;

const G1_BYTES: u64 = 96; // uncompressed, as bellperson writes keys
const G2_BYTES: u64 = 192;

/// Section lengths (in points) of a bellperson `Parameters` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyShape {
    pub ic: u64,
    pub h: u64,
    pub l: u64,
    pub a: u64,
    pub b_g1: u64,
    pub b_g2: u64,
}

impl KeyShape {
    /// Reads only the length prefixes (seeking over the points), so it is cheap for any size.
    /// Layout (bellperson `Parameters::write`): vk = alpha_g1, beta_g1, beta_g2, gamma_g2,
    /// delta_g1, delta_g2, then u32-BE-length-prefixed ic, h, l, a, b_g1 (G1), b_g2 (G2).
    pub fn read(path: &Path) -> Result<Self> {
        let not_a_key = || format!("{} is not a bellperson-format Groth16 key", path.display());
        let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let file_len = f.metadata()?.len();
        let mut pos = 3 * G1_BYTES + 3 * G2_BYTES; // the fixed part of the verifying key
        let mut lens = [0u64; 6];
        let point_bytes = [G1_BYTES, G1_BYTES, G1_BYTES, G1_BYTES, G1_BYTES, G2_BYTES];
        for (len, size) in lens.iter_mut().zip(point_bytes) {
            if pos + 4 > file_len {
                bail!("{}: truncated at byte {pos} of {file_len}", not_a_key());
            }
            let mut prefix = [0u8; 4];
            f.seek(SeekFrom::Start(pos))?;
            f.read_exact(&mut prefix).with_context(not_a_key)?;
            *len = u64::from(u32::from_be_bytes(prefix));
            pos += 4 + *len * size;
            if pos > file_len {
                bail!("{}: a section runs past the end ({pos} > {file_len} bytes)", not_a_key());
            }
        }
        if pos != file_len {
            bail!("{}: {} trailing bytes", not_a_key(), file_len - pos);
        }
        let [ic, h, l, a, b_g1, b_g2] = lens;
        Ok(KeyShape { ic, h, l, a, b_g1, b_g2 })
    }
}

/// What bellperson's prover sees of a circuit: counts and query densities, mirroring
/// `ProvingAssignment` (inputs start with ONE; an input or aux variable is dense in a query
/// when it appears there with a non-zero coefficient).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    constraints: u64,
    inputs: u64,
    aux: u64,
    a_aux: u64,
    b_inp: u64,
    b_aux: u64,
}

#[derive(Default)]
struct DensityCs {
    constraints: u64,
    a_aux: Vec<bool>,
    b_inp: Vec<bool>,
    b_aux: Vec<bool>,
}

impl DensityCs {
    fn mark(lc: &LinearCombination<Scalar>, inputs: Option<&mut Vec<bool>>, aux: &mut [bool]) {
        if let Some(inputs) = inputs {
            for (&i, c) in lc.iter_inputs() {
                if !c.is_zero_vartime() {
                    inputs[i] = true;
                }
            }
        }
        for (&i, c) in lc.iter_aux() {
            if !c.is_zero_vartime() {
                aux[i] = true;
            }
        }
    }

    fn counts(&self) -> Counts {
        let ones = |v: &[bool]| v.iter().filter(|&&x| x).count() as u64;
        Counts {
            constraints: self.constraints,
            inputs: self.b_inp.len() as u64,
            aux: self.a_aux.len() as u64,
            a_aux: ones(&self.a_aux),
            b_inp: ones(&self.b_inp),
            b_aux: ones(&self.b_aux),
        }
    }
}

impl ConstraintSystem<Scalar> for DensityCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        // Values are not needed for the shape: the closure is never run.
        self.a_aux.push(false);
        self.b_aux.push(false);
        Ok(Variable::new_unchecked(Index::Aux(self.a_aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.b_inp.push(false);
        Ok(Variable::new_unchecked(Index::Input(self.b_inp.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
        // Inputs are fully dense in A (the prover adds `input * 0 = 0` for each), so only
        // aux variables are tracked there.
        Self::mark(&a(LinearCombination::zero()), None, &mut self.a_aux);
        Self::mark(&b(LinearCombination::zero()), Some(&mut self.b_inp), &mut self.b_aux);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

fn measure(c: ShaChain) -> Counts {
    let mut cs = DensityCs::default();
    cs.alloc_input(|| "ONE", || Ok(Scalar::ONE)).expect("counting never fails");
    c.synthesize(&mut cs).expect("counting never fails");
    cs.counts()
}

/// Counts for `chain`, without synthesising all of it (2^27 constraints take minutes): the
/// circuit is affine in its link and filler counts (every link after the first has the same
/// shape, each filler bit is one dense aux variable), so three small chains determine it.
fn counts_of(chain: &ShaChain) -> Counts {
    let seed = chain.seed();
    let (n, f) = (chain.links() as u64, chain.filler_bits() as u64);
    let base = measure(ShaChain::new(0, 0, seed));
    let one = measure(ShaChain::new(1, 0, seed));
    let two = measure(ShaChain::new(2, 0, seed));
    let with_bit = measure(ShaChain::new(0, 1, seed));
    let affine = |pick: fn(&Counts) -> u64| -> u64 {
        let chain_part = match n {
            0 => pick(&base),
            n => pick(&one) + (n - 1) * (pick(&two) - pick(&one)),
        };
        chain_part + f * (pick(&with_bit) - pick(&base))
    };
    Counts {
        constraints: affine(|c| c.constraints),
        inputs: affine(|c| c.inputs),
        aux: affine(|c| c.aux),
        a_aux: affine(|c| c.a_aux),
        b_inp: affine(|c| c.b_inp),
        b_aux: affine(|c| c.b_aux),
    }
}

/// The key shape bellperson's generator produces for `chain` (points at infinity dropped
/// from A/B, which for a random tau means exactly the dense variables).
pub fn expected_key(chain: &ShaChain) -> KeyShape {
    let c = counts_of(chain);
    // The prover's A/B/C vectors hold every constraint plus one per input; the FFT domain
    // is the next power of two and H has one point fewer.
    let domain = (c.constraints + c.inputs).next_power_of_two();
    KeyShape {
        ic: c.inputs,
        h: domain - 1,
        l: c.aux,
        a: c.inputs + c.a_aux,
        b_g1: c.b_inp + c.b_aux,
        b_g2: c.b_inp + c.b_aux,
    }
}

/// Fails with a readable list of differences when the key does not fit the circuit.
pub fn check_key(path: &Path, chain: &ShaChain) -> Result<()> {
    let got = KeyShape::read(path)?;
    let want = expected_key(chain);
    if got == want {
        return Ok(());
    }
    let rows = [
        ("ic", got.ic, want.ic),
        ("h", got.h, want.h),
        ("l", got.l, want.l),
        ("a", got.a, want.a),
        ("b_g1", got.b_g1, want.b_g1),
        ("b_g2", got.b_g2, want.b_g2),
    ];
    let diffs: Vec<String> = rows
        .iter()
        .filter(|(_, g, w)| g != w)
        .map(|(name, g, w)| format!("{name}: key has {g} points, circuit needs {w}"))
        .collect();
    bail!("{} does not fit this circuit ({})", path.display(), diffs.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn affine_counts_match_full_synthesis() {
        for (links, filler) in [(0, 0), (0, 9), (1, 3), (3, 0), (5, 37)] {
            let c = ShaChain::new(links, filler, 7);
            assert_eq!(counts_of(&c), measure(c.clone()), "links {links}, filler {filler}");
        }
    }

    /// The real thing: a key from bellperson's own generator must pass the check. Slow on a
    /// small machine (a ~46k-constraint key): `cargo test --release -- --ignored`.
    #[test]
    #[ignore]
    fn bellperson_generated_key_fits() {
        use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
        let chain = ShaChain::new(1, 5, 3);
        let params =
            bellperson::groth16::generate_random_parameters::<blstrs::Bls12, _, _>(chain.clone(), &mut ChaCha20Rng::seed_from_u64(0)).unwrap();
        let path = std::env::temp_dir().join(format!("supraseal-bench-real-key-{}", std::process::id()));
        params.write(File::create(&path).unwrap()).unwrap();
        let result = check_key(&path, &chain);
        let other = check_key(&path, &ShaChain::new(2, 5, 3));
        let _ = std::fs::remove_file(&path);
        result.unwrap();
        assert!(other.is_err());
    }

    #[test]
    fn reads_and_checks_key_headers() {
        let chain = ShaChain::new(1, 10, 1);
        let want = expected_key(&chain);
        assert_eq!(want.ic, 3);
        assert_eq!(want.l, measure(chain.clone()).aux);

        // A file with the right section lengths (the points themselves are not read).
        let write = |shape: &KeyShape, extra: usize| {
            let mut bytes = vec![0u8; (3 * G1_BYTES + 3 * G2_BYTES) as usize];
            for (n, size) in [
                (shape.ic, G1_BYTES),
                (shape.h, G1_BYTES),
                (shape.l, G1_BYTES),
                (shape.a, G1_BYTES),
                (shape.b_g1, G1_BYTES),
                (shape.b_g2, G2_BYTES),
            ] {
                bytes.extend_from_slice(&(n as u32).to_be_bytes());
                bytes.resize(bytes.len() + (n * size) as usize, 0);
            }
            bytes.resize(bytes.len() + extra, 0);
            let path = std::env::temp_dir().join(format!("supraseal-bench-key-{}-{extra}-{}", std::process::id(), shape.h));
            File::create(&path).unwrap().write_all(&bytes).unwrap();
            path
        };
        let good = write(&want, 0);
        assert_eq!(KeyShape::read(&good).unwrap(), want);
        check_key(&good, &chain).unwrap();

        let other = ShaChain::new(1, 11, 1);
        let err = check_key(&good, &other).unwrap_err().to_string();
        assert!(err.contains("l: key has"), "{err}");

        let trailing = write(&want, 5);
        assert!(KeyShape::read(&trailing).unwrap_err().to_string().contains("trailing"));
        let short = KeyShape { h: want.h + 1, ..want };
        let p = write(&short, 0);
        let truncated = std::fs::read(&p).unwrap();
        std::fs::write(&p, &truncated[..truncated.len() - 100]).unwrap();
        assert!(KeyShape::read(&p).is_err());
        for p in [good, trailing, p] {
            let _ = std::fs::remove_file(p);
        }
    }
}
