//! A circuit shape on disk, so that a new process reads a circuit's R1CS matrices instead of
//! extracting them again (15.9 s for a 32GiB PoRep partition on 16 cores). The file is ours
//! alone and never trusted: it names its format version and circuit id, a BLAKE2b checksum
//! covers it, and the matrices it holds are checked as extraction leaves them (row starts
//! ascending to the entry count, columns within z, coefficient ids within the table, canonical
//! coefficients, densities of the circuit's lengths) before it is used.
//!
//! Layout, little-endian: `MAGIC`, the format version (u32), the circuit id (u32 length, then
//! its bytes), the counts (u64: inputs, aux, rows, A's, B's and C's entries, coefficients),
//! then A, B and C each as its blocks of rows (`matrix_blocks`): the index (u64 pairs: a
//! block's bytes and entries), then the blocks' bytes; then the coefficients (32-byte canonical
//! representations), the densities' words (u64: A over aux, B over inputs, B over aux); last
//! the checksum of everything before it.

use std::io::{self, Write};
use std::path::Path;

use blake2b_simd::{Params, State};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::matrix::{MINUS_ONE, ONE};
use super::matrix_blocks;
use super::shape::CircuitShape;
use crate::synthesis::density::Density;

const MAGIC: &[u8; 8] = b"CUZKSHP\0";
/// Changes whenever the layout or what extraction records changes: a file of another version
/// is rebuilt.
pub const FORMAT_VERSION: u32 = 2;
/// The checksum is the BLAKE2b-256 of the BLAKE2b-256 digests of the file's consecutive
/// chunks of this size, so that reading checks them on all cores.
const CHECKSUM_CHUNK: usize = 64 << 20;
const CHECKSUM_BYTES: usize = 32;

fn digest() -> Params {
    let mut params = Params::new();
    params.hash_length(CHECKSUM_BYTES);
    params
}

/// Writes what goes through it and digests it chunk by chunk.
struct Checksummed<W> {
    out: W,
    chunk: State,
    in_chunk: usize,
    chunk_digests: Vec<u8>,
}

impl<W: Write> Checksummed<W> {
    fn new(out: W) -> Self {
        Checksummed {
            out,
            chunk: digest().to_state(),
            in_chunk: 0,
            chunk_digests: Vec::new(),
        }
    }

    fn put(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        while !bytes.is_empty() {
            let n = bytes.len().min(CHECKSUM_CHUNK - self.in_chunk);
            self.chunk.update(&bytes[..n]);
            self.in_chunk += n;
            bytes = &bytes[n..];
            if self.in_chunk == CHECKSUM_CHUNK {
                self.end_chunk();
            }
        }
        Ok(())
    }

    fn end_chunk(&mut self) {
        let chunk = std::mem::replace(&mut self.chunk, digest().to_state());
        self.chunk_digests.extend_from_slice(chunk.finalize().as_bytes());
        self.in_chunk = 0;
    }

    /// Writes the checksum after everything written so far.
    fn finish(mut self) -> io::Result<W> {
        if self.in_chunk > 0 {
            self.end_chunk();
        }
        self.out.write_all(digest().hash(&self.chunk_digests).as_bytes())?;
        Ok(self.out)
    }

    fn put_u64(&mut self, value: u64) -> io::Result<()> {
        self.put(&value.to_le_bytes())
    }
}

/// The checksum of `bytes` (`Checksummed`'s), its chunks digested on all cores.
fn checksum(bytes: &[u8]) -> [u8; CHECKSUM_BYTES] {
    let chunk_digests: Vec<u8> = bytes
        .par_chunks(CHECKSUM_CHUNK)
        .map(|chunk| *digest().hash(chunk).as_array())
        .collect::<Vec<[u8; 64]>>()
        .iter()
        .flat_map(|d| d[..CHECKSUM_BYTES].to_vec())
        .collect();
    let mut sum = [0u8; CHECKSUM_BYTES];
    sum.copy_from_slice(digest().hash(&chunk_digests).as_bytes());
    sum
}

impl CircuitShape {
    /// Writes the shape of circuit `circuit_id` in the file format above.
    pub fn write_file(&self, circuit_id: &str, out: impl Write) -> io::Result<()> {
        let m = self.matrices().map_err(|e| io::Error::other(e.to_string()))?;
        let mut w = Checksummed::new(io::BufWriter::with_capacity(1 << 20, out));
        w.put(MAGIC)?;
        w.put(&FORMAT_VERSION.to_le_bytes())?;
        w.put(&(circuit_id.len() as u32).to_le_bytes())?;
        w.put(circuit_id.as_bytes())?;
        for count in [
            self.num_inputs(),
            self.num_aux(),
            self.num_constraints(),
            m.a.num_nonzeros(),
            m.b.num_nonzeros(),
            m.c.num_nonzeros(),
            m.coefficients.len(),
        ] {
            w.put_u64(count as u64)?;
        }
        for m in [&m.a, &m.b, &m.c] {
            let blocks = matrix_blocks::encode(m);
            for block in &blocks {
                w.put_u64(block.bytes.len() as u64)?;
                w.put_u64(block.entries)?;
            }
            for block in &blocks {
                w.put(&block.bytes)?;
            }
        }
        for c in &m.coefficients {
            w.put(&c.to_repr())?;
        }
        for d in self.densities() {
            d.words().iter().try_for_each(|word| w.put_u64(*word))?;
        }
        w.finish()?.flush()
    }

    /// The shape of circuit `circuit_id` in the file at `path` (mapped while it is read), or
    /// what is wrong with it. The shape knows its file ([`Self::set_file`]).
    pub fn read_path(path: &Path, circuit_id: &str) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        // SAFETY: the map is only read while the file is open; a file changed underneath fails
        // its checksum (or its checks).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        let shape = Self::read_file(&map, circuit_id)?;
        shape.set_file(path, circuit_id);
        Ok(shape)
    }

    /// The shape of circuit `circuit_id` in `bytes` (a whole file), or what is wrong with it.
    pub fn read_file(bytes: &[u8], circuit_id: &str) -> Result<Self, String> {
        let body_len = bytes.len().checked_sub(CHECKSUM_BYTES).ok_or("shorter than its checksum")?;
        let mut r = Reader { bytes: &bytes[..body_len] };
        if r.take(MAGIC.len())? != MAGIC {
            return Err("not a cuzk circuit shape file".into());
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(format!("format version {version}, this library writes {FORMAT_VERSION}"));
        }
        let id_len = r.u32()? as usize;
        if r.take(id_len)? != circuit_id.as_bytes() {
            return Err(format!("not the shape of circuit {circuit_id}"));
        }
        let mut counts = [0u64; 7];
        for count in &mut counts {
            *count = r.u64()?;
        }
        let [inputs, aux, rows, nnz_a, nnz_b, nnz_c, coefficients] = counts;
        // Counts that could not be real (indices are 32-bit) are refused before any allocation.
        let limit = |n: u64, what: &str| {
            usize::try_from(n)
                .ok()
                .filter(|&n| n < u32::MAX as usize)
                .ok_or(format!("{what}: {n} is out of range"))
        };
        let (inputs, aux, rows, coefficients) = (
            limit(inputs, "inputs")?,
            limit(aux, "aux")?,
            limit(rows, "rows")?,
            limit(coefficients, "coefficients")?,
        );
        if checksum(&bytes[..body_len]) != bytes[body_len..] {
            return Err("checksum mismatch".into());
        }
        let mut matrix = |nnz: u64, name: &str| {
            let nnz = limit(nnz, "entries")?;
            let index = r.u64s(2 * rows.div_ceil(matrix_blocks::ROWS_PER_BLOCK))?;
            let blocks = index
                .chunks_exact(2)
                .map(|pair| {
                    Ok((
                        r.take(usize::try_from(pair[0]).map_err(|_| "a block's length is out of range")?)?,
                        pair[1],
                    ))
                })
                .collect::<Result<Vec<_>, String>>()?;
            matrix_blocks::decode(&blocks, rows, nnz).map_err(|e| format!("{name}: {e}"))
        };
        let (a, b, c) = (matrix(nnz_a, "A")?, matrix(nnz_b, "B")?, matrix(nnz_c, "C")?);
        let coefficients = r
            .take(32 * coefficients)?
            .par_chunks_exact(32)
            .map(|repr| Option::from(Scalar::from_repr(repr.try_into().expect("32 bytes"))).ok_or("a coefficient is not canonical"))
            .collect::<Result<Vec<Scalar>, _>>()?;
        if coefficients.len() < 2 || coefficients[ONE as usize] != Scalar::ONE || coefficients[MINUS_ONE as usize] != -Scalar::ONE {
            return Err("the coefficient table does not start with +1, -1".into());
        }
        let mut density =
            |len: usize| Density::from_words(r.u64s(len.div_ceil(64))?, len).ok_or_else(|| "a density has bits past its length".to_string());
        let densities = [density(aux)?, density(inputs)?, density(aux)?];
        if !r.bytes.is_empty() {
            return Err(format!("{} bytes past the densities", r.bytes.len()));
        }
        for (name, m) in [("A", &a), ("B", &b), ("C", &c)] {
            m.check(inputs + aux, coefficients.len()).map_err(|e| format!("{name}: {e}"))?;
        }
        Ok(CircuitShape::from_parts(inputs, aux, [a, b, c], coefficients, densities))
    }
}

/// Reads the file's fields in order.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.bytes.len() {
            return Err("truncated".into());
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn u64s(&mut self, n: usize) -> Result<Vec<u64>, String> {
        let bytes = self.take(n.checked_mul(8).ok_or("truncated")?)?;
        Ok(bytes
            .par_chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};

    /// x² = y with a public y, and a constant that is neither 1 nor -1 (a coefficient table
    /// entry of its own).
    struct Square;

    impl Circuit<Scalar> for Square {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(3)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9)))?;
            cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            cs.enforce(
                || "5x",
                |lc| lc + (Scalar::from(5), x),
                |lc| lc + CS::one(),
                |lc| lc + (Scalar::from(15), CS::one()),
            );
            Ok(())
        }
    }

    fn file() -> (CircuitShape, Vec<u8>) {
        let shape = CircuitShape::extract(Square).unwrap();
        let mut bytes = Vec::new();
        shape.write_file("square", &mut bytes).unwrap();
        (shape, bytes)
    }

    #[test]
    fn a_written_shape_reads_back_equal() {
        let (shape, bytes) = file();
        assert_eq!(CircuitShape::read_file(&bytes, "square").unwrap(), shape);
    }

    #[test]
    fn released_matrices_are_read_back_from_the_file_and_checked() {
        let (shape, bytes) = file();
        assert_eq!(shape.release_matrices(), 0, "no file to read them back from: kept");
        let dir = std::env::temp_dir().join(format!("cuzk-shape-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("square.cuzk-shape");
        std::fs::write(&path, &bytes).unwrap();
        let read = CircuitShape::read_path(&path, "square").unwrap();
        assert_eq!(read.held_bytes(), read.size_bytes());
        assert!(read.release_matrices() > 0 && read.held_bytes() < read.size_bytes());
        assert_eq!(read.release_matrices(), 0, "released once");
        // Read back when needed, equal, and held again.
        let (inputs, aux) = ([Scalar::ONE, Scalar::from(9)], [Scalar::from(3)]);
        assert_eq!(read.evaluate(&inputs, &aux).unwrap(), shape.evaluate(&inputs, &aux).unwrap());
        assert_eq!(read, shape);
        assert_eq!(read.held_bytes(), read.size_bytes());
        // A file damaged since: refused when read back, never used.
        assert!(read.release_matrices() > 0);
        let mut bad = bytes.clone();
        bad[bytes.len() / 2] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        assert!(read.matrices().unwrap_err().message.contains("checksum"));
        std::fs::remove_file(&path).unwrap();
        assert!(read.evaluate(&inputs, &aux).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_damage_is_refused() {
        let (_, bytes) = file();
        let refused = |bytes: &[u8], id: &str| CircuitShape::read_file(bytes, id).expect_err("damaged file accepted");
        assert!(refused(&bytes, "cube").contains("not the shape of circuit cube"));
        assert!(refused(&bytes[..bytes.len() - 1], "square").contains("checksum"));
        assert!(refused(&[], "square").contains("shorter"));
        // Every single flipped bit: refused (the checksum or a field's check), never a shape.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1 << (i % 8);
            refused(&bad, "square");
        }
        let mut other_version = bytes.clone();
        other_version[MAGIC.len()] ^= 0x80;
        assert!(refused(&other_version, "square").contains("format version"));
    }

    #[test]
    fn a_consistent_file_with_impossible_matrices_is_refused() {
        // A column past z, written by a writer whose checksum is right: the checks catch it.
        let (shape, _) = file();
        let m = shape.matrices().unwrap();
        let [mut a, b, c] = [m.a.clone(), m.b.clone(), m.c.clone()];
        a.columns_mut()[0] = (shape.num_inputs() + shape.num_aux()) as u32;
        let densities = shape.densities().map(|d| d.clone());
        let bad = CircuitShape::from_parts(shape.num_inputs(), shape.num_aux(), [a, b, c], m.coefficients.clone(), densities);
        let mut bytes = Vec::new();
        bad.write_file("square", &mut bytes).unwrap();
        assert!(CircuitShape::read_file(&bytes, "square").unwrap_err().contains("column"));
    }
}
