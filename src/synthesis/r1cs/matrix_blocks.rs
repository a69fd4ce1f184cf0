//! A sparse matrix as the shape file stores it: in blocks of rows, each block's row lengths,
//! columns and coefficient ids as LEB128 varints, a column as its difference from the entry
//! before it (zigzag-coded; a block's first entry from column 0). A constraint's variables
//! were mostly allocated close together and most coefficients are ±1 (ids 0 and 1), so an entry
//! takes ~3 bytes instead of 8 and a row's start 1 byte instead of 4: a 32GiB PoRep shape's
//! file shrinks, and a cold start reads it from disk sooner. Blocks are independent, so they
//! are encoded and decoded on all cores, straight into the matrix's vectors.

use std::ops::Range;

use rayon::prelude::*;

use super::matrix::SparseMatrix;

/// Rows per block.
pub(super) const ROWS_PER_BLOCK: usize = 1 << 16;

/// One encoded block: its bytes and how many entries its rows hold.
pub(super) struct EncodedBlock {
    pub bytes: Vec<u8>,
    pub entries: u64,
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn zigzag(difference: i64) -> u64 {
    ((difference << 1) ^ (difference >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

/// The blocks of `m`'s rows, encoded on all cores.
pub(super) fn encode(m: &SparseMatrix) -> Vec<EncodedBlock> {
    let rows = m.num_rows();
    (0..rows.div_ceil(ROWS_PER_BLOCK))
        .into_par_iter()
        .map(|b| encode_block(m, b * ROWS_PER_BLOCK..rows.min((b + 1) * ROWS_PER_BLOCK)))
        .collect()
}

fn encode_block(m: &SparseMatrix, rows: Range<usize>) -> EncodedBlock {
    let starts = m.row_starts();
    let entries = (starts[rows.start] as usize)..(starts[rows.end] as usize);
    let mut bytes = Vec::with_capacity(rows.len() + 3 * entries.len());
    let mut previous = 0i64;
    for row in rows {
        put_varint(&mut bytes, u64::from(starts[row + 1] - starts[row]));
        for e in starts[row] as usize..starts[row + 1] as usize {
            let column = i64::from(m.columns()[e]);
            put_varint(&mut bytes, zigzag(column - previous));
            put_varint(&mut bytes, u64::from(m.coefficient_ids()[e]));
            previous = column;
        }
    }
    EncodedBlock {
        bytes,
        entries: entries.len() as u64,
    }
}

/// Reads the varints of one block in order.
struct Varints<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Varints<'_> {
    fn next(&mut self) -> Result<u64, String> {
        // Most values (row lengths, ids ±1, nearby columns) take one byte.
        if let Some(&byte) = self.bytes.get(self.at).filter(|&&b| b < 0x80) {
            self.at += 1;
            return Ok(u64::from(byte));
        }
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.bytes.get(self.at).ok_or("a matrix block ends inside a value")?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a matrix block holds a value of more than 64 bits".into())
    }

    fn next_u32(&mut self, what: &str) -> Result<u32, String> {
        u32::try_from(self.next()?).map_err(|_| format!("a matrix block holds a {what} past 32 bits"))
    }
}

/// The matrix of `rows` rows and `entries` entries from its blocks (`blocks[b]`: block b's
/// bytes and the entries its rows hold, as `encode` made them), decoded on all cores; what
/// is wrong with them otherwise. The matrix's bounds are left to `SparseMatrix::check`.
pub(super) fn decode(blocks: &[(&[u8], u64)], rows: usize, entries: usize) -> Result<SparseMatrix, String> {
    if blocks.len() != rows.div_ceil(ROWS_PER_BLOCK) {
        return Err(format!("{} blocks for {rows} rows", blocks.len()));
    }
    let indexed = blocks.iter().try_fold(0u64, |sum, &(_, n)| sum.checked_add(n));
    if indexed != Some(entries as u64) {
        return Err(format!("the blocks' entries do not add up to {entries}"));
    }
    // Each row takes at least one byte and each entry two: counts the bytes cannot hold are
    // refused before their vectors are allocated.
    let bytes: usize = blocks.iter().map(|(b, _)| b.len()).sum();
    if rows > bytes || entries > bytes / 2 {
        return Err(format!("{bytes} bytes cannot hold {rows} rows and {entries} entries"));
    }
    let mut starts = vec![0u32; rows + 1];
    let mut columns = vec![0u32; entries];
    let mut ids = vec![0u32; entries];
    starts[rows] = entries as u32;
    // Each block's share of the three vectors, split off in order.
    let mut shares = Vec::with_capacity(blocks.len());
    let (mut s, mut c, mut i) = (&mut starts[..rows], &mut columns[..], &mut ids[..]);
    let mut first_entry = 0u32;
    for (b, &(block, n)) in blocks.iter().enumerate() {
        let block_rows = ROWS_PER_BLOCK.min(rows - b * ROWS_PER_BLOCK);
        let n = n as usize;
        let (block_starts, rest_s) = std::mem::take(&mut s).split_at_mut(block_rows);
        let (block_columns, rest_c) = std::mem::take(&mut c).split_at_mut(n);
        let (block_ids, rest_i) = std::mem::take(&mut i).split_at_mut(n);
        (s, c, i) = (rest_s, rest_c, rest_i);
        shares.push((block, first_entry, block_starts, block_columns, block_ids));
        first_entry += n as u32;
    }
    shares
        .into_par_iter()
        .try_for_each(|(block, first_entry, starts, columns, ids)| decode_block(block, first_entry, starts, columns, ids))?;
    Ok(SparseMatrix::from_parts(starts, columns, ids))
}

/// One block into its rows' starts (counted from `first_entry`) and its entries' columns and
/// ids, which it must fill exactly.
fn decode_block(bytes: &[u8], first_entry: u32, starts: &mut [u32], columns: &mut [u32], ids: &mut [u32]) -> Result<(), String> {
    let mut v = Varints { bytes, at: 0 };
    let (mut entry, mut previous) = (0usize, 0i64);
    for start in starts.iter_mut() {
        *start = first_entry + entry as u32;
        let length = v.next()? as usize;
        if length > columns.len() - entry {
            return Err("a matrix block's rows hold more entries than its index says".into());
        }
        for e in entry..entry + length {
            let column = previous
                .checked_add(unzigzag(v.next()?))
                .and_then(|c| u32::try_from(c).ok())
                .ok_or("a matrix block holds a column outside 32 bits")?;
            columns[e] = column;
            ids[e] = v.next_u32("coefficient id")?;
            previous = i64::from(column);
        }
        entry += length;
    }
    if entry != columns.len() || v.at != bytes.len() {
        return Err("a matrix block's rows do not fill it as its index says".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(m: &SparseMatrix) -> SparseMatrix {
        let blocks = encode(m);
        let views: Vec<(&[u8], u64)> = blocks.iter().map(|b| (b.bytes.as_slice(), b.entries)).collect();
        decode(&views, m.num_rows(), m.num_nonzeros()).unwrap()
    }

    #[test]
    fn matrices_round_trip_over_block_boundaries() {
        // Rows of 0 to 4 entries, columns near and far (0, the largest u32s), ids 0, 1 and large.
        let rows = 2 * ROWS_PER_BLOCK + 123;
        let mut starts = vec![0u32];
        let (mut columns, mut ids) = (Vec::new(), Vec::new());
        for r in 0..rows {
            for k in 0..r % 5 {
                columns.push(match (r + k) % 7 {
                    0 => 0,
                    1 => u32::MAX,
                    2 => u32::MAX - 1,
                    _ => (r * 3 + k) as u32,
                });
                ids.push(if k == 3 { 70_000 } else { (k % 2) as u32 });
            }
            starts.push(columns.len() as u32);
        }
        let m = SparseMatrix::from_parts(starts, columns, ids);
        assert_eq!(round_trip(&m), m);
        let encoded: usize = encode(&m).iter().map(|b| b.bytes.len()).sum();
        assert!(encoded < 8 * m.num_nonzeros() + 4 * rows, "{encoded} bytes");
        let empty = SparseMatrix::from_parts(vec![0], Vec::new(), Vec::new());
        assert_eq!(round_trip(&empty), empty);
    }

    #[test]
    fn blocks_that_disagree_with_their_counts_are_refused() {
        let m = SparseMatrix::from_parts(vec![0, 2, 3], vec![5, 9, 1], vec![0, 1, 2]);
        let blocks = encode(&m);
        let bytes = blocks[0].bytes.clone();
        let refused = |bytes: &[u8], entries: u64, rows: usize, total: usize| decode(&[(bytes, entries)], rows, total).unwrap_err();
        assert!(refused(&bytes, 3, 2, 4).contains("add up"));
        assert!(refused(&bytes, 2, 2, 2).contains("more entries"));
        assert!(refused(&bytes[..bytes.len() - 1], 3, 2, 3).contains("ends inside"));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(refused(&longer, 3, 2, 3).contains("do not fill"));
        assert!(refused(&[0xff; 11], 0, 1, 0).contains("more than 64 bits"));
        assert!(decode(&[], 2, 0).unwrap_err().contains("blocks for"));
        // Counts whose sum wraps around to the total: refused, not split at.
        let rows = ROWS_PER_BLOCK + 1;
        let wrapping = [(&bytes[..], u64::MAX), (&bytes[..], 4)];
        assert!(decode(&wrapping, rows, 3).unwrap_err().contains("add up"));
        // Any bytes under counts that add up: an error or a matrix, never a panic.
        for seed in 0..200u32 {
            let garbage: Vec<u8> = (0..40).map(|i| (seed.wrapping_mul(2_654_435_761) >> (i % 24)) as u8 ^ i as u8).collect();
            let _ = decode(&[(&garbage, u64::from(seed % 8))], 3, (seed % 8) as usize);
        }
    }
}
