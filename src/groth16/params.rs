//! Proving keys: bellperson's parameters with every point decoded, and an identity that device
//! copies of the points are keyed by; the params file format decoded on all cores.

use std::io::{self, ErrorKind};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

/// A Groth16 proving key with every point decoded (kept resident by the engine), with an
/// identity that device-side copies of its points are keyed by.
pub struct ProvingKey {
    params: Parameters<Bls12>,
    id: u64,
    label: String,
    /// Copies of this key elsewhere (device memory) hold a `Weak` of it: once the key is gone
    /// they are stale and are dropped.
    alive: Arc<()>,
}

impl ProvingKey {
    /// Wraps decoded parameters; `label` names the key in logs and the engine status (the
    /// file path for keys read from disk). Every call gives a new identity.
    pub fn new(params: Parameters<Bls12>, label: impl Into<String>) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        ProvingKey {
            params,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            label: label.into(),
            alive: Arc::new(()),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn liveness(&self) -> Weak<()> {
        Arc::downgrade(&self.alive)
    }

    /// Bytes of the points of the five queries in affine form (what a device copy holds).
    pub fn points_bytes(&self) -> u64 {
        self.query_sizes().points_bytes()
    }

    pub fn query_sizes(&self) -> QuerySizes {
        let p = &self.params;
        QuerySizes {
            ic: p.vk.ic.len() as u64,
            h: p.h.len() as u64,
            l: p.l.len() as u64,
            a: p.a.len() as u64,
            b_g1: p.b_g1.len() as u64,
            b_g2: p.b_g2.len() as u64,
        }
    }
}

/// How many points each query of a proving key holds: what sizes a proof's buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuerySizes {
    /// The verifying key's input points: the circuit's public inputs (1 included).
    pub ic: u64,
    /// The domain's size minus one.
    pub h: u64,
    /// The circuit's private (aux) variables.
    pub l: u64,
    pub a: u64,
    pub b_g1: u64,
    pub b_g2: u64,
}

impl QuerySizes {
    /// Affine bytes of a G1 and of a G2 point.
    pub const G1_BYTES: u64 = 96;
    pub const G2_BYTES: u64 = 192;

    pub fn points_bytes(&self) -> u64 {
        Self::G1_BYTES * (self.h + self.l + self.a + self.b_g1) + Self::G2_BYTES * self.b_g2
    }

    /// The evaluation domain's size.
    pub fn domain(&self) -> u64 {
        self.h + 1
    }

    /// Variables of the assignment: public inputs and aux.
    pub fn variables(&self) -> u64 {
        self.ic + self.l
    }

    /// Reads the counts of a params file (bellperson's format, see `decode_parameters`)
    /// without decoding its points: a few small reads, whatever the key's size.
    pub fn read(file: &mut (impl io::Read + io::Seek)) -> io::Result<Self> {
        let truncated = || io::Error::new(ErrorKind::UnexpectedEof, "parameter file is truncated");
        let vk = VerifyingKey::<Bls12>::read(&mut *file)?;
        let mut next = |point_bytes: u64| -> io::Result<u64> {
            let mut count = [0u8; 4];
            file.read_exact(&mut count).map_err(|e| match e.kind() {
                ErrorKind::UnexpectedEof => truncated(),
                _ => e,
            })?;
            let count = u64::from(u32::from_be_bytes(count));
            file.seek(io::SeekFrom::Current((count * point_bytes) as i64))?;
            Ok(count)
        };
        let sizes = QuerySizes {
            ic: vk.ic.len() as u64,
            h: next(Self::G1_BYTES)?,
            l: next(Self::G1_BYTES)?,
            a: next(Self::G1_BYTES)?,
            b_g1: next(Self::G1_BYTES)?,
            b_g2: next(Self::G2_BYTES)?,
        };
        // A seek past the end succeeds: the file must be long enough for the last query.
        let end = file.stream_position()?;
        if file.seek(io::SeekFrom::End(0))? < end {
            return Err(truncated());
        }
        Ok(sizes)
    }
}

impl Deref for ProvingKey {
    type Target = Parameters<Bls12>;

    fn deref(&self) -> &Parameters<Bls12> {
        &self.params
    }
}

/// Decodes bellperson's params format (`Parameters::write`: the verifying key, then h, l, a,
/// b_g1 as a big-endian u32 count and uncompressed G1 points, b_g2 the same in G2) with the
/// points of each query decoded in parallel. bellperson's own reader decodes one point at a
/// time: 4.3–4.6 s for the 1.1 GB 2KiB key on the H200 machine, minutes for a 47 GB 32GiB key.
/// Same checks as bellperson's unchecked read: every point on its curve, none at infinity.
pub fn decode_parameters(bytes: &[u8]) -> io::Result<Parameters<Bls12>> {
    let mut cursor = io::Cursor::new(bytes);
    let vk = VerifyingKey::<Bls12>::read(&mut cursor)?;
    let mut offset = cursor.position() as usize;
    let h = decode_query::<G1Affine>(bytes, &mut offset, "h")?;
    let l = decode_query::<G1Affine>(bytes, &mut offset, "l")?;
    let a = decode_query::<G1Affine>(bytes, &mut offset, "a")?;
    let b_g1 = decode_query::<G1Affine>(bytes, &mut offset, "b_g1")?;
    let b_g2 = decode_query::<G2Affine>(bytes, &mut offset, "b_g2")?;
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    })
}

/// The points of the query `name` starting at `offset` (moved past them). They are collected
/// from an indexed iterator, which writes each point in place: collecting `Result`s instead
/// gathers per-task vectors and copies them again (a 2KiB key decodes in 27–39 % less time,
/// docs/PERFORMANCE.md). A point that does not decode is remembered by index and reported
/// after the pass.
fn decode_query<P>(bytes: &[u8], offset: &mut usize, name: &str) -> io::Result<Vec<P>>
where
    P: UncompressedEncoding + PrimeCurveAffine + Send,
{
    let truncated = || io::Error::new(ErrorKind::UnexpectedEof, format!("parameter file is truncated in query {name}"));
    let count = bytes.get(*offset..*offset + 4).ok_or_else(truncated)?;
    let count = u32::from_be_bytes(count.try_into().expect("4 bytes")) as usize;
    let point_bytes = P::Uncompressed::default().as_ref().len();
    let start = *offset + 4;
    let end = count
        .checked_mul(point_bytes)
        .and_then(|n| n.checked_add(start))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(truncated)?;
    *offset = end;
    let first_bad = AtomicUsize::new(usize::MAX);
    let points: Vec<P> = bytes[start..end]
        .par_chunks(point_bytes)
        .enumerate()
        .map(|(i, chunk)| {
            let mut repr = P::Uncompressed::default();
            repr.as_mut().copy_from_slice(chunk);
            match Option::<P>::from(P::from_uncompressed_unchecked(&repr)) {
                Some(point) if !bool::from(point.is_identity()) => point,
                _ => {
                    first_bad.fetch_min(i, Ordering::Relaxed);
                    P::identity()
                }
            }
        })
        .collect();
    match first_bad.into_inner() {
        usize::MAX => Ok(points),
        i => Err(io::Error::new(
            ErrorKind::InvalidData,
            format!("point {i} of query {name} is not on its curve or is the point at infinity"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective, Scalar};
    use ff::Field;
    use group::{Curve, Group};
    use rand::SeedableRng;

    fn g1s(n: usize, rng: &mut impl rand::RngCore) -> Vec<G1Affine> {
        (0..n)
            .map(|_| (G1Projective::generator() * Scalar::random(&mut *rng)).to_affine())
            .collect()
    }

    fn g2s(n: usize, rng: &mut impl rand::RngCore) -> Vec<G2Affine> {
        (0..n)
            .map(|_| (G2Projective::generator() * Scalar::random(&mut *rng)).to_affine())
            .collect()
    }

    /// Small parameters in bellperson's format, and where the l query's points start.
    fn written_parameters() -> (Parameters<Bls12>, Vec<u8>, usize) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let g2 = g2s(3, &mut rng);
        let g1 = g1s(3, &mut rng);
        let vk = VerifyingKey::<Bls12> {
            alpha_g1: g1[0],
            beta_g1: g1[1],
            beta_g2: g2[0],
            gamma_g2: g2[1],
            delta_g1: g1[2],
            delta_g2: g2[2],
            ic: g1s(2, &mut rng),
        };
        let params = Parameters {
            vk,
            h: Arc::new(g1s(7, &mut rng)),
            l: Arc::new(g1s(5, &mut rng)),
            a: Arc::new(g1s(4, &mut rng)),
            b_g1: Arc::new(g1s(3, &mut rng)),
            b_g2: Arc::new(g2s(3, &mut rng)),
        };
        let mut bytes = Vec::new();
        params.write(&mut bytes).unwrap();
        let mut vk_bytes = Vec::new();
        params.vk.write(&mut vk_bytes).unwrap();
        let l_start = vk_bytes.len() + 4 + 7 * 96 + 4;
        (params, bytes, l_start)
    }

    #[test]
    fn decodes_what_bellperson_writes() {
        let (params, bytes, _) = written_parameters();
        let decoded = decode_parameters(&bytes).unwrap();
        assert!(decoded.vk == params.vk);
        assert_eq!(decoded.h, params.h);
        assert_eq!(decoded.l, params.l);
        assert_eq!(decoded.a, params.a);
        assert_eq!(decoded.b_g1, params.b_g1);
        assert_eq!(decoded.b_g2, params.b_g2);
    }

    #[test]
    fn a_bad_point_is_named_by_query_and_index() {
        let (_, mut bytes, l_start) = written_parameters();
        // Point 3 of l off its curve: its y changed.
        bytes[l_start + 3 * 96 + 95] ^= 1;
        let e = decode_parameters(&bytes).err().expect("off the curve");
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert_eq!(e.to_string(), "point 3 of query l is not on its curve or is the point at infinity");
        // Point 1 of l the point at infinity (uncompressed: the infinity flag, all else zero).
        let (_, mut bytes, l_start) = written_parameters();
        bytes[l_start + 96..l_start + 2 * 96].fill(0);
        bytes[l_start + 96] = 0x40;
        let e = decode_parameters(&bytes).err().expect("infinity");
        assert!(e.to_string().starts_with("point 1 of query l "), "{e}");
        // Cut inside b_g2.
        let (_, bytes, _) = written_parameters();
        let e = decode_parameters(&bytes[..bytes.len() - 10]).err().expect("truncated");
        assert_eq!(e.to_string(), "parameter file is truncated in query b_g2");
    }
}
