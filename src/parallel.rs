//! Copying on all cores: large vectors assembled from parts made in parallel (a 32GiB
//! partition's witness is 4.2 GB; appended part by part it is copied on one core).

use rayon::prelude::*;

/// Appends every slice of `parts` to `out`, in order, the slices copied in parallel into one
/// allocation.
pub(crate) fn extend_parallel<T: Copy + Send + Sync>(out: &mut Vec<T>, parts: &[&[T]]) {
    let start = out.len();
    let total: usize = parts.iter().map(|p| p.len()).sum();
    out.reserve_exact(total);
    let mut spare = &mut out.spare_capacity_mut()[..total];
    let mut destinations = Vec::with_capacity(parts.len());
    for part in parts {
        let (head, tail) = spare.split_at_mut(part.len());
        destinations.push(head);
        spare = tail;
    }
    destinations.into_par_iter().zip(parts).for_each(|(dst, src)| {
        for (d, s) in dst.iter_mut().zip(src.iter()) {
            d.write(*s);
        }
    });
    // SAFETY: the `total` slots after `start` were all written above (the destinations tile
    // them exactly), and T is Copy (nothing to drop).
    unsafe { out.set_len(start + total) };
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
    let start = out.len();
    let total: usize = kept.iter().sum();
    out.reserve_exact(total);
    let mut spare = &mut out.spare_capacity_mut()[..total];
    let mut destinations = Vec::with_capacity(kept.len());
    for &n in &kept {
        let (head, tail) = spare.split_at_mut(n);
        destinations.push(head);
        spare = tail;
    }
    destinations
        .into_par_iter()
        .zip(src.par_chunks(CHUNK))
        .enumerate()
        .for_each(|(k, (dst, chunk))| {
            let chosen = chunk.iter().enumerate().filter(|&(i, x)| keep(k * CHUNK + i, x));
            for (d, (_, x)) in dst.iter_mut().zip(chosen) {
                d.write(*x);
            }
        });
    // SAFETY: each destination received exactly its chunk's kept count of elements (`keep` is
    // a pure function of index and element), and the destinations tile the `total` slots
    // after `start`; T is Copy (nothing to drop).
    unsafe { out.set_len(start + total) };
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
