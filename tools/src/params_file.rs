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

use anyhow::{Context, Result};
use bellperson::groth16::Parameters;
use blstrs::Bls12;
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
