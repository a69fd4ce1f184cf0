//! Groth16 parameters written in bellperson's params format (what `Parameters::write` writes:
//! the verifying key, then each query's point count as a big-endian u32 and its points
//! uncompressed), the points encoded on all cores, through a temporary file renamed into place
//! once complete so that a reader never sees part of it.
//!
//! Why not `Parameters::write`: it encodes one point after another on one core (3.7 s of the
//! 2KiB update's 655 MB; a 32GiB synthetic key is 47 GB).

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};
use cuzk::ProvingKey;
use group::UncompressedEncoding;
use rayon::prelude::*;

/// Points encoded at a time (96 MB of G1, 192 MB of G2).
const BATCH: usize = 1 << 20;

/// `params` written to `path`.
pub fn write_parameters(params: &Parameters<Bls12>, path: &Path) -> Result<()> {
    write_renamed(path, |file| encode_parameters(params, file))
}

/// `path` written by `write` through `<path>.partial`, renamed into place once complete.
pub fn write_renamed(path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<()> {
    let partial = path.with_extension("partial");
    let mut file = BufWriter::with_capacity(
        16 << 20,
        File::create(&partial).with_context(|| format!("creating {}", partial.display()))?,
    );
    write(&mut file)
        .and_then(|()| file.flush())
        .with_context(|| format!("writing {}", partial.display()))?;
    drop(file);
    fs::rename(&partial, path).with_context(|| format!("renaming {} to {}", partial.display(), path.display()))
}

/// The bytes `Parameters::write` writes.
fn encode_parameters(params: &Parameters<Bls12>, out: &mut impl Write) -> io::Result<()> {
    params.vk.write(&mut *out)?;
    encode_query(&params.h, out)?;
    encode_query(&params.l, out)?;
    encode_query(&params.a, out)?;
    encode_query(&params.b_g1, out)?;
    encode_query(&params.b_g2, out)
}

fn encode_query<P: UncompressedEncoding + Sync>(points: &[P], out: &mut impl Write) -> io::Result<()> {
    let count = u32::try_from(points.len())
        .map_err(|_| io::Error::other(format!("{} points: the format counts a query's points in 32 bits", points.len())))?;
    out.write_all(&count.to_be_bytes())?;
    let size = P::Uncompressed::default().as_ref().len();
    let mut bytes = Vec::new();
    for batch in points.chunks(BATCH) {
        bytes.resize(batch.len() * size, 0);
        bytes
            .par_chunks_mut(size)
            .zip(batch)
            .for_each(|(to, point)| to.copy_from_slice(point.to_uncompressed().as_ref()));
        out.write_all(&bytes)?;
    }
    Ok(())
}

/// The base field's modulus p, big-endian (as a coordinate of an uncompressed point).
const P_BIG_ENDIAN: [u8; 48] = [
    0x1a, 0x01, 0x11, 0xea, 0x39, 0x7f, 0xe6, 0x9a, 0x4b, 0x1b, 0xa7, 0xb6, 0x43, 0x4b, 0xac, 0xd7, 0x64, 0x77, 0x4b, 0x84, 0xf3, 0x85, 0x12, 0xbf,
    0x67, 0x30, 0xd2, 0xa0, 0xf6, 0xb0, 0xf6, 0x24, 0x1e, 0xab, 0xff, 0xfe, 0xb1, 0x53, 0xff, 0xff, 0xb9, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xaa, 0xab,
];

/// Encodings a params file's reader must refuse in place of a valid uncompressed point
/// (`valid`; `compressed`: the same point compressed), each named: the compressed encoding in
/// the first half (blst's deserialize would take it), the point at infinity (refused in a
/// proving key), the sort flag set, a coordinate equal to p, a y off the curve.
fn refused_encodings(valid: &[u8], compressed: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let with = |change: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = valid.to_vec();
        change(&mut bytes);
        bytes
    };
    let mut compressed_first = vec![0; valid.len()];
    compressed_first[..compressed.len()].copy_from_slice(compressed);
    let mut infinity = vec![0; valid.len()];
    infinity[0] = 0x40;
    let last = valid.len() - 48;
    vec![
        ("compressed", compressed_first),
        ("infinity", infinity),
        ("sort flag", with(&|b| b[0] |= 0x20)),
        ("a coordinate equal to p", with(&|b| b[last..].copy_from_slice(&P_BIG_ENDIAN))),
        ("off the curve", with(&|b| *b.last_mut().unwrap() ^= 1)),
    ]
}

/// [`refused_encodings`] of G1 point `p`, and (0, 2): on the curve, but blst refuses it as
/// outside the group.
pub fn refused_g1_encodings(p: &G1Affine) -> Vec<(&'static str, Vec<u8>)> {
    let mut refused = refused_encodings(&p.to_uncompressed(), &p.to_compressed());
    let mut zero_two = vec![0; 96];
    zero_two[95] = 2;
    refused.push(("(0, 2)", zero_two));
    refused
}

/// [`refused_encodings`] of G2 point `p`.
pub fn refused_g2_encodings(p: &G2Affine) -> Vec<(&'static str, Vec<u8>)> {
    refused_encodings(&p.to_uncompressed(), &p.to_compressed())
}

/// Where point `index` of query `query` (0 … 4: h, l, a, b_g1, b_g2) of `params` starts in the
/// params file [`write_parameters`] writes.
pub fn point_offset(params: &Parameters<Bls12>, query: usize, index: usize) -> usize {
    let mut vk = Vec::new();
    params.vk.write(&mut vk).expect("writing to memory");
    let g1 = [params.h.len(), params.l.len(), params.a.len(), params.b_g1.len()];
    let before: usize = g1[..query.min(4)].iter().map(|n| 4 + 96 * n).sum();
    let point_bytes = if query == 4 { 192 } else { 96 };
    vk.len() + before + 4 + index * point_bytes
}

/// The key of params file bytes `bytes`, labelled `label`, as the engine opens a file: written
/// to a temporary file whose name is gone once it is open (the key keeps the file open: its
/// points are read after that).
pub fn open_key_bytes(bytes: &[u8], label: &str) -> io::Result<ProvingKey> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!("cuzk-key-bytes-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    fs::write(&path, bytes)?;
    let key = ProvingKey::open(File::open(&path)?, label.to_string());
    fs::remove_file(&path)?;
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The same bytes as bellperson's writer, for queries of several batches and of none.
    #[test]
    fn bellpersons_bytes() {
        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let circuit = crate::circuits::RandomCircuit::new(&mut rng, 300, true);
        let mut params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).unwrap();
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let h: Vec<_> = params.h.iter().copied().cycle().take(BATCH + 3).collect();
        params.h = std::sync::Arc::new(h);
        params.b_g2 = std::sync::Arc::new(Vec::new());
        encode_parameters(&params, &mut ours).unwrap();
        params.write(&mut theirs).unwrap();
        assert!(ours == theirs, "{} bytes against bellperson's {}, seed {seed}", ours.len(), theirs.len());
    }
}
