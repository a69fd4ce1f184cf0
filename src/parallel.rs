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
