//! The 0/1 split of each query's MSM on the device: the sum of the bases whose scalar is 1 by
//! batch addition (batch_add.rs), the rest by the tail MSM (tail_msm.rs). A cost model decides
//! per G1 query whether the batch addition pays; B_G2 always splits. No cuda/ file of its own:
//! it drives cuda/batch_add.cuh and cuda/tail_msm.cuh.

use std::borrow::Cow;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;
use rayon::ThreadPool;

use super::device::Device;
use super::device_key::PointSource;
use super::sys;
use super::tail_msm::gather_tail;
use super::GpuBackend;
use crate::backend::prep::ClassifiedScalars;
use crate::backend::SplitPolicy;
use crate::error::Result;
use crate::timings::{nanos, timed, Timings};

/// The device's cost model of the 0/1 split, in ns per point, for each place the points can
/// be, fitted on the H200 to the 2KiB PoRep C2 with the split forced on and off
/// (docs/PERFORMANCE.md). Streamed: batch addition sends every point of the query over PCIe
/// and scans it, whatever its scalar; a 1-scalar left in the tail MSM costs its gather on the
/// host, its transfer and additions into the one bucket all 1-scalars share: splitting pays
/// above ~28 % of 1-scalars. Resident: batch addition reads the query in device memory
/// (~1.6 ns per point); a 1-scalar folded into the tail costs ~18 ns on the host (moved
/// between the classes) and ~10 ns on the device: splitting pays above ~6 % of 1-scalars.
struct SplitCosts {
    batch_add_per_query_point: f64,
    one_in_tail: f64,
}

const STREAMED_COSTS: SplitCosts = SplitCosts {
    batch_add_per_query_point: 12.0,
    one_in_tail: 42.0,
};
const RESIDENT_COSTS: SplitCosts = SplitCosts {
    batch_add_per_query_point: 1.6,
    one_in_tail: 28.0,
};

impl SplitPolicy {
    /// Whether batch addition of the 1-scalars pays for a query of `npoints`, against adding
    /// them to the tail MSM.
    fn split_pays(self, npoints: usize, ones: usize, resident: bool) -> bool {
        let costs = if resident { RESIDENT_COSTS } else { STREAMED_COSTS };
        match self {
            SplitPolicy::Always => true,
            SplitPolicy::Never => false,
            SplitPolicy::CostModel => ones as f64 * costs.one_in_tail > npoints as f64 * costs.batch_add_per_query_point,
        }
    }

    /// The classes the device uses for a query of `npoints`: as they are, or with the 1-scalars
    /// moved into the tail when their batch addition does not pay.
    fn apply<'a>(self, name: &str, npoints: usize, classes: &'a ClassifiedScalars, resident: bool) -> Cow<'a, ClassifiedScalars> {
        if classes.dense {
            return Cow::Borrowed(classes);
        }
        if resident && classes.tail_indices.len() * 2 > npoints {
            // Mostly full-width (a PoSt's witness): one MSM over the query in place beats a
            // gathered copy of nearly all of it, and needs no memory beside the key.
            log::debug!(
                "{name}: {} of {npoints} scalars are full-width: one dense MSM",
                classes.tail_indices.len()
            );
            return Cow::Owned(classes.densified(npoints));
        }
        let mut classes = Cow::Borrowed(classes);
        if !self.split_pays(npoints, classes.ones.len(), resident) {
            log::debug!(
                "{name}: batch addition of {} 1-scalars does not pay over {npoints} points",
                classes.ones.len()
            );
            classes.to_mut().fold_ones_into_tail();
        }
        classes
    }
}

/// One G1 query's MSM as the device computes it: the sum of the bases whose scalar is 1 by
/// batch addition (when the split pays) plus the tail MSM, whose points the device gathers
/// from a resident key or the host gathers from a streamed one.
pub(super) struct G1Msm<'a> {
    query: u32,
    points: &'a [G1Affine],
    pub(super) classes: Cow<'a, ClassifiedScalars>,
    /// The 1-scalars as the device's batch addition reads them; empty when there are none.
    pub(super) ones_bitmap: Vec<u32>,
}

impl<'a> G1Msm<'a> {
    /// Decides the split and makes the bitmap (before the device turn, on all cores).
    pub(super) fn plan(name: &str, query: u32, points: &'a [G1Affine], classes: &'a ClassifiedScalars, policy: SplitPolicy, resident: bool) -> Self {
        let classes = policy.apply(name, points.len(), classes, resident);
        let ones_bitmap = if classes.ones.is_empty() {
            Vec::new()
        } else {
            classes.ones_bitmap(points.len())
        };
        G1Msm {
            query,
            points,
            classes,
            ones_bitmap,
        }
    }

    /// Σ sᵢ·Pᵢ on the device, the batch addition timed into `batch_ns` and the tail into
    /// `tail_ns`.
    pub(super) fn run(
        &self,
        device: &Device,
        src: &PointSource,
        staging: &sys::Staging,
        pool: &ThreadPool,
        batch_ns: &mut u64,
        tail_ns: &mut u64,
    ) -> Result<G1Projective> {
        let query = src.points(self.query, self.points);
        let ones = if self.classes.ones.is_empty() {
            G1Projective::identity()
        } else {
            timed(batch_ns, || GpuBackend::batch_add(device, &query, &self.ones_bitmap, staging))?
        };
        let tail = timed(tail_ns, || {
            let host_tail = host_tail(src, self.points, &self.classes, pool);
            let tail_points = match &host_tail {
                None => query,
                Some(points) => src.points(self.query, points),
            };
            GpuBackend::tail_msm(device, &tail_points, &self.classes)
        })?;
        Ok(ones + tail)
    }
}

impl GpuBackend {
    /// The whole B_G2 MSM on the device: batch addition of the 1-scalars (`ones_bitmap`,
    /// timed into batch_add), then the tail (into msm_b_g2).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn b_g2_msm(
        device: &Device,
        src: &PointSource,
        points: &[G2Affine],
        classes: &ClassifiedScalars,
        ones_bitmap: &[u32],
        staging: &sys::Staging,
        pool: &ThreadPool,
        t: &mut Timings,
    ) -> Result<G2Projective> {
        let query = src.points(sys::QUERY_B_G2, points);
        let start = Instant::now();
        let ones = if classes.ones.is_empty() {
            G2Projective::identity()
        } else {
            Self::batch_add_g2(device, &query, ones_bitmap, staging)?
        };
        t.batch_add_ns += nanos(start.elapsed());
        let start = Instant::now();
        let gathered = host_tail(src, points, classes, pool);
        let tail_points = match &gathered {
            None => query,
            Some(points) => src.points(sys::QUERY_B_G2, points),
        };
        let tail = Self::tail_msm_g2(device, &tail_points, classes)?;
        t.msm_b_g2_ns += nanos(start.elapsed());
        Ok(ones + tail)
    }
}

/// The tail's points as the device reads them from the host: None for a resident key (the
/// device gathers them, or reads a dense tail in place); else the gathered tail points, or the
/// whole query for a dense tail.
fn host_tail<'p, P: Copy + Send + Sync>(src: &PointSource, points: &'p [P], classes: &ClassifiedScalars, pool: &ThreadPool) -> Option<Cow<'p, [P]>> {
    match (src.is_resident(), classes.dense) {
        (true, _) => None,
        (false, true) => Some(Cow::Borrowed(points)),
        (false, false) => Some(Cow::Owned(pool.install(|| gather_tail(points, classes)))),
    }
}
