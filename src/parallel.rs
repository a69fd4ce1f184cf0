//! Copying on all cores: large vectors assembled from parts made in parallel (a 32GiB
//! partition's witness is 4.2 GB; appended part by part it is copied on one core).

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Appends every slice of `parts` to `out`, in order, the slices copied in parallel into one
/// allocation.
pub(crate) fn extend_parallel<T: Copy + Send + Sync>(out: &mut Vec<T>, parts: &[&[T]]) {
    let lengths: Vec<usize> = parts.iter().map(|p| p.len()).collect();
    fill_tiles(out, &lengths, |i, dst| write_copy(dst, parts[i]));
}

/// Writes `src` into `dst`, of the same length (`write_copy_of_slice` is newer than our MSRV).
pub(crate) fn write_copy<T: Copy>(dst: &mut [MaybeUninit<T>], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "a copy into a slot range of another length");
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(*s);
    }
}

/// Appends to `out` the elements of `src` that `keep(index, element)` keeps, in order, on all
/// cores: counted per chunk, then each chunk's kept elements copied to their place (`keep` runs
/// twice per element). Rayon's filter-collect instead gathers per-task vectors and copies them
/// again.
pub(crate) fn extend_selected<T: Copy + Send + Sync>(out: &mut Vec<T>, src: &[T], keep: impl Fn(usize, &T) -> bool + Sync) {
    const CHUNK: usize = 1 << 16;
    let kept: Vec<usize> = src
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(k, chunk)| chunk.iter().enumerate().filter(|&(i, x)| keep(k * CHUNK + i, x)).count())
        .collect();
    fill_tiles(out, &kept, |k, dst| {
        let chunk = &src[k * CHUNK..src.len().min((k + 1) * CHUNK)];
        let chosen = chunk.iter().enumerate().filter(|&(i, x)| keep(k * CHUNK + i, x));
        for (d, (_, x)) in dst.iter_mut().zip(chosen) {
            d.write(*x);
        }
    });
}

/// Appends `lengths.iter().sum()` elements to `out`: tile i, the next `lengths[i]` slots,
/// written by `fill(i, tile)` on all cores, which must write every slot of its tile.
fn fill_tiles<T: Copy + Send + Sync>(out: &mut Vec<T>, lengths: &[usize], fill: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync) {
    let filled = try_fill_tiles(out, lengths, |i, tile| {
        fill(i, tile);
        Ok::<(), std::convert::Infallible>(())
    });
    let Ok(_) = filled;
}

/// [`fill_tiles`] with a `fill` that may fail and returns something per tile (in tile order):
/// on an error `out` keeps its length (whatever was written stays unused) and the error is
/// returned; on success every `fill` has written each slot of its tile.
pub(crate) fn try_fill_tiles<T: Copy + Send + Sync, R: Send, E: Send>(
    out: &mut Vec<T>,
    lengths: &[usize],
    fill: impl Fn(usize, &mut [MaybeUninit<T>]) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let start = out.len();
    let total: usize = lengths.iter().sum();
    out.reserve_exact(total);
    let mut spare = &mut out.spare_capacity_mut()[..total];
    let mut tiles = Vec::with_capacity(lengths.len());
    for &n in lengths {
        let (head, tail) = spare.split_at_mut(n);
        tiles.push(head);
        spare = tail;
    }
    let results = tiles
        .into_par_iter()
        .enumerate()
        .map(|(i, tile)| fill(i, tile))
        .collect::<Result<Vec<R>, E>>()?;
    // SAFETY: the tiles cover the `total` slots after `start` exactly and every `fill` returned
    // Ok, having written every slot of its tile (extend_parallel copies a part of the tile's
    // length, extend_selected the chunk's kept elements, counted above with the same pure
    // `keep`, the segmented witness a segment's values of the tile's length); T is Copy
    // (nothing to drop).
    unsafe { out.set_len(start + total) };
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_keeps_order_across_chunks() {
        let src: Vec<u64> = (0..300_000).collect();
        let mut out = vec![7, 8];
        extend_selected(&mut out, &src, |i, x| i % 3 == 0 && x % 2 == 0);
        let expected: Vec<u64> = [7, 8].into_iter().chain(src.iter().copied().filter(|x| x % 6 == 0)).collect();
        assert_eq!(out, expected);
        extend_selected(&mut out, &[], |_, _: &u64| true);
        assert_eq!(out.len(), expected.len());
    }
}
