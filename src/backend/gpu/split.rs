//! Each query's MSM plan on the device. The 0/1 split: the sum of the bases whose scalar is 1
//! by batch addition (batch_add.rs), the rest by the tail MSM (tail_msm.rs); a cost model
//! decides per G1 query whether the batch addition pays; B_G2 always splits. Or, for a mostly
//! full-width witness, the scalars read from the witness on the device (witness_msm.rs). One
//! after another it drives cuda/batch_add.cuh, cuda/tail_msm.cuh and cuda/witness_msm.cuh; a
//! small proof's split MSMs run at once with H's by cuda/split.cuh.

use std::borrow::Cow;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective};
use group::Group;
use rayon::ThreadPool;

use super::context::ContextObject;
use super::device::Device;
use super::device_key::PointSource;
use super::msm::implementation;
use super::sys;
use super::sys::call;
use super::tail_msm::{gather_tail, tail_indices};
use super::witness_classes::ClassifiedMsms;
use super::witness_msm::{AtOnce, WitnessMsms};
use super::GpuBackend;
use crate::backend::prep::{ClassifiedScalars, PreparedMsms};
use crate::backend::{MsmChoice, SplitPolicy};
use crate::error::{Error, Result};
use crate::groth16::QuerySizes;
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
    pub(super) fn split_pays(self, npoints: usize, ones: usize, resident: bool) -> bool {
        ones as u64 >= self.min_ones_to_split(npoints, resident)
    }

    /// The fewest 1-scalars of a query of `npoints` whose batch addition pays: by the cost
    /// model, more than npoints × (batch addition per point) / (a 1-scalar in the tail).
    pub(super) fn min_ones_to_split(self, npoints: usize, resident: bool) -> u64 {
        let costs = if resident { RESIDENT_COSTS } else { STREAMED_COSTS };
        match self {
            SplitPolicy::Always => 0,
            SplitPolicy::Never => u64::MAX,
            SplitPolicy::CostModel => (npoints as f64 * costs.batch_add_per_query_point / costs.one_in_tail).floor() as u64 + 1,
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
    classes: Cow<'a, ClassifiedScalars>,
    /// The 1-scalars as the device's batch addition reads them; empty when there are none.
    ones_bitmap: Vec<u32>,
    msm: MsmChoice,
}

impl<'a> G1Msm<'a> {
    /// Decides the split and makes the bitmap (before the device turn, on all cores).
    fn plan(name: &str, query: u32, npoints: usize, classes: &'a ClassifiedScalars, policy: SplitPolicy, resident: bool, msm: MsmChoice) -> Self {
        let classes = policy.apply(name, npoints, classes, resident);
        let ones_bitmap = if classes.ones.is_empty() {
            Vec::new()
        } else {
            classes.ones_bitmap(npoints)
        };
        G1Msm {
            query,
            classes,
            ones_bitmap,
            msm,
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
        let query = src.points(self.query);
        let ones = if self.classes.ones.is_empty() {
            G1Projective::identity()
        } else {
            timed(batch_ns, || GpuBackend::batch_add(device, &query, &self.ones_bitmap, staging))?
        };
        let tail = timed(tail_ns, || {
            let host_tail = host_tail(src.streamed_g1(self.query), &self.classes, pool);
            let tail_points = match &host_tail {
                None => query,
                Some(points) => src.gathered(self.query, points),
            };
            GpuBackend::tail_msm(device, &tail_points, &self.classes, self.msm)
        })?;
        Ok(ones + tail)
    }
}

/// One split query as cuda/split.cuh takes it, `classes` and their 1-scalars' `ones_bitmap`
/// alive while it is read.
fn split_query(classes: &ClassifiedScalars, ones_bitmap: &[u32]) -> sys::SplitQuery {
    sys::SplitQuery {
        ones_bitmap: if classes.ones.is_empty() {
            std::ptr::null()
        } else {
            ones_bitmap.as_ptr()
        },
        tail_indices: tail_indices(classes),
        tail_scalars: classes.tail_scalars.as_ptr().cast(),
        tail_n: classes.tail_scalars.len(),
    }
}

/// B_G2's classes and its 1-scalars' bitmap in a split plan of G1 queries `g1`, B's classes `b`
/// and B_G2's own bitmap: always split (the cost model was fitted to G1 only); a dense B_G1
/// tail serves B_G2 too (same scalars, as many points).
fn b_g2_split<'p>(g1: &'p [G1Msm; 3], b: &'p ClassifiedScalars, b_g2_bitmap: &'p [u32], sizes: &QuerySizes) -> (&'p ClassifiedScalars, &'p [u32]) {
    let b_g1 = &g1[2];
    let classes = if b_g1.classes.dense && sizes.b_g1 == sizes.b_g2 {
        &*b_g1.classes
    } else {
        b
    };
    let bitmap = if b_g2_bitmap.is_empty() { &b_g1.ones_bitmap } else { b_g2_bitmap };
    (classes, bitmap)
}

/// The most points of H's query for which a split witness's MSMs run at once with H's (a domain
/// of 2^22: the 2KiB and 8MiB PoRep), their scratch all held together: there the tails and
/// batch additions are bound by latency, and beside H's MSM they take SMs it leaves idle.
pub(super) const SPLIT_AT_ONCE_MAX_H: u64 = (1 << 22) - 1;

/// The witness MSMs of one circuit (L, A, B_G1, B_G2) as the device computes them: split into
/// batch addition and tails from the host's classes or from the classes the device finds in
/// its copy of the witness (a witness of mostly 0s and 1s: witness_classes.rs), or with their
/// scalars read from the witness on the device (a mostly full-width one: witness_msm.rs).
pub(super) enum QueryMsms<'a> {
    Split {
        g1: Box<[G1Msm<'a>; 3]>,
        /// B_G2's classes when B_G1's planned ones do not serve it, and its 1-scalars' bitmap
        /// when B_G1's does not either.
        b: &'a ClassifiedScalars,
        b_g2_bitmap: Vec<u32>,
        msm: MsmChoice,
    },
    Classified(ClassifiedMsms),
    OnDevice(WitnessMsms),
}

/// A tail MSM as the device runs it over a resident key (cuda/tail_msm.cuh): its scalars'
/// count, and whether their points are gathered by index (else read in place: a dense tail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TailPlan {
    pub(super) points: u64,
    pub(super) gathered: bool,
}

impl TailPlan {
    fn of(classes: &ClassifiedScalars) -> Self {
        TailPlan {
            points: classes.tail_scalars.len() as u64,
            gathered: !classes.dense,
        }
    }
}

/// The G1 queries of [`QueryMsms`], in order.
const G1_QUERIES: [(&str, u32); 3] = [("L", sys::QUERY_L), ("A", sys::QUERY_A), ("B_G1", sys::QUERY_B_G1)];

impl<'a> QueryMsms<'a> {
    /// Plans the split of every query from the host's classes `p` (before the device turn, on
    /// all cores).
    pub(super) fn split(p: &'a PreparedMsms, sizes: &QuerySizes, policy: SplitPolicy, resident: bool, msm: MsmChoice) -> Self {
        let npoints = [sizes.l, sizes.a, sizes.b_g1].map(|n| n as usize);
        let classes = [&p.l, &p.a, &p.b];
        let g1 = [0, 1, 2].map(|q| G1Msm::plan(G1_QUERIES[q].0, G1_QUERIES[q].1, npoints[q], classes[q], policy, resident, msm));
        // B_G2 always splits (below): B_G1's bitmap unless its ones went to the tail.
        // A dense B_G1 tail serves B_G2 (below), ones included: no bitmap then.
        let same_as_b_g1 = !matches!(g1[2].classes, Cow::Owned(ref c) if !c.dense) && sizes.b_g1 == sizes.b_g2;
        let b_g2_bitmap = if same_as_b_g1 || p.b.ones.is_empty() {
            Vec::new()
        } else {
            p.b.ones_bitmap(sizes.b_g2 as usize)
        };
        QueryMsms::Split {
            g1: Box::new(g1),
            b: &p.b,
            b_g2_bitmap,
            msm,
        }
    }

    /// The tail MSMs of L, A, B_G1 and B_G2 as planned for a split witness (at most as large,
    /// when its classes are found on the device in the turn); None when the MSMs read their
    /// scalars from the witness on the device.
    pub(super) fn tail_plans(&self, sizes: &QuerySizes) -> Option<[TailPlan; 4]> {
        match self {
            QueryMsms::Split { g1, b, b_g2_bitmap, .. } => {
                let (b_g2, _) = b_g2_split(g1, b, b_g2_bitmap, sizes);
                Some([
                    TailPlan::of(&g1[0].classes),
                    TailPlan::of(&g1[1].classes),
                    TailPlan::of(&g1[2].classes),
                    TailPlan::of(b_g2),
                ])
            }
            QueryMsms::Classified(msms) => Some(msms.tail_plans()),
            QueryMsms::OnDevice(_) => None,
        }
    }

    /// The selections of z the MSMs read their scalars by, when they read the witness on the
    /// device.
    pub(super) fn witness_msms(&self) -> Option<&WitnessMsms> {
        match self {
            QueryMsms::OnDevice(msms) => Some(msms),
            QueryMsms::Classified(msms) => Some(msms.selections()),
            QueryMsms::Split { .. } => None,
        }
    }

    /// Whether the MSMs read the witness in the device's buffer set, which must then hold it
    /// until the last of them.
    pub(super) fn read_device_witness(&self) -> bool {
        matches!(self, QueryMsms::OnDevice(_) | QueryMsms::Classified(_))
    }

    /// The witness MSMs when they run at once (`WitnessMsms::run_at_once`), else None: one
    /// after another by [`Self::g1`] and [`Self::b_g2`].
    pub(super) fn at_once(&self, sizes: &QuerySizes, lg_domain: u32) -> Option<&WitnessMsms> {
        let h = (1usize << lg_domain) - 1;
        match self {
            QueryMsms::OnDevice(msms) if msms.run_at_once([h, sizes.l as usize, sizes.a as usize, sizes.b_g1 as usize]) => Some(msms),
            _ => None,
        }
    }

    /// G1 query `q` (an index into [`G1_QUERIES`]): batch addition timed into batch_add, the
    /// classes found on the device into prep_msm, the rest into the query's MSM phase.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn g1(
        &self,
        q: usize,
        device: &Device,
        set: u32,
        src: &PointSource,
        staging: &sys::Staging,
        pool: &ThreadPool,
        t: &mut Timings,
    ) -> Result<G1Projective> {
        let msm_ns = match q {
            0 => &mut t.msm_l_ns,
            1 => &mut t.msm_a_ns,
            _ => &mut t.msm_b_g1_ns,
        };
        match self {
            QueryMsms::Split { g1, .. } => g1[q].run(device, src, staging, pool, &mut t.batch_add_ns, msm_ns),
            QueryMsms::Classified(msms) => {
                let points = src.points(G1_QUERIES[q].1);
                let sum = msms.g1_msm(q, device, set, &points, staging, msm_ns, &mut t.prep_msm_ns, &mut t.batch_add_ns)?;
                Ok(sys::to_projective(&sum))
            }
            QueryMsms::OnDevice(msms) => {
                let query = [&msms.l, &msms.a, &msms.b][q];
                let points = src.points(G1_QUERIES[q].1);
                timed(msm_ns, || {
                    GpuBackend::witness_msm(sys::cuzk_gpu_witness_msm, device, set, &points, msms, query, staging)
                })
                .map(|sum| sys::to_projective(&sum))
            }
        }
    }

    /// B_G1's and B_G2's MSMs, `make_way` before them: a classified witness's together (B's
    /// classes found once on the device), any other's one after another, `make_way` between.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn b(
        &self,
        device: &Device,
        set: u32,
        src: &PointSource,
        sizes: &QuerySizes,
        pool: &ThreadPool,
        t: &mut Timings,
        make_way: &mut dyn FnMut(&mut Timings) -> Result<()>,
    ) -> Result<(G1Projective, G2Projective)> {
        make_way(t)?;
        if let QueryMsms::Classified(msms) = self {
            let points = [sys::QUERY_B_G1, sys::QUERY_B_G2].map(|q| src.points(q));
            let (b_g1, b_g2) = device.with_staging(t, |staging, t| msms.b_msms(device, set, &points, staging, t))?;
            return Ok((sys::to_projective(&b_g1), sys::to_projective_g2(&b_g2)));
        }
        let b_g1 = device.with_staging(t, |staging, t| self.g1(2, device, set, src, staging, pool, t))?;
        make_way(t)?;
        let b_g2 = device.with_staging(t, |staging, t| self.b_g2(device, set, src, sizes, staging, pool, t))?;
        Ok((b_g1, b_g2))
    }

    #[allow(clippy::too_many_arguments)]
    fn b_g2(
        &self,
        device: &Device,
        set: u32,
        src: &PointSource,
        sizes: &QuerySizes,
        staging: &sys::Staging,
        pool: &ThreadPool,
        t: &mut Timings,
    ) -> Result<G2Projective> {
        match self {
            QueryMsms::Split { g1, b, b_g2_bitmap, msm } => {
                // On the device, not on the CPU cores beside it: measured faster at every
                // size (docs/PERFORMANCE.md).
                let (classes, bitmap) = b_g2_split(g1, b, b_g2_bitmap, sizes);
                GpuBackend::b_g2_msm(device, src, classes, bitmap, *msm, staging, pool, t)
            }
            QueryMsms::Classified(_) => Err(Error::internal("a classified B_G2 is found with B_G1 (`Self::b`)")),
            QueryMsms::OnDevice(msms) => {
                let points = src.points(sys::QUERY_B_G2);
                timed(&mut t.msm_b_g2_ns, || {
                    GpuBackend::witness_msm(sys::cuzk_gpu_witness_msm_g2, device, set, &points, msms, &msms.b, staging)
                })
                .map(|sum| sys::to_projective_g2(&sum))
            }
        }
    }
}

impl QueryMsms<'_> {
    /// Whether the split MSMs run at once with H's ([`Self::split_at_once`]): cuzk's MSM, H's
    /// query of at most [`SPLIT_AT_ONCE_MAX_H`] points, every query resident (`src`).
    pub(super) fn split_runs_at_once(&self, sizes: &QuerySizes, src: &PointSource) -> bool {
        matches!(self, QueryMsms::Split { msm, .. } if msm.is_cuzk()) && (1..=SPLIT_AT_ONCE_MAX_H).contains(&sizes.h) && src.is_resident()
    }

    /// Starts the split witness MSMs (L, A, B_G1, B_G2) on `device` (cuda/split.cuh), for
    /// [`Self::split_at_once`] to finish beside H's: queued before the quotient stage, whose
    /// transforms leave SMs idle, they need only the classes.
    pub(super) fn start_split_witness(&self, device: &Device, src: &PointSource, sizes: &QuerySizes) -> Result<SplitWitnessInFlight> {
        let QueryMsms::Split { g1, b, b_g2_bitmap, msm } = self else {
            return Err(Error::internal("split MSMs at once without a split plan"));
        };
        let (b_classes, b_bitmap) = b_g2_split(g1, b, b_g2_bitmap, sizes);
        let points = [sys::QUERY_L, sys::QUERY_A, sys::QUERY_B_G1, sys::QUERY_B_G2].map(|q| src.points(q));
        let queries = [
            split_query(&g1[0].classes, &g1[0].ones_bitmap),
            split_query(&g1[1].classes, &g1[1].ones_bitmap),
            split_query(&g1[2].classes, &g1[2].ones_bitmap),
            split_query(b_classes, b_bitmap),
        ];
        let (ctx, life) = device.ctx.current()?;
        let mut out = std::ptr::null_mut();
        // SAFETY: every query's points are resident (split_runs_at_once), its bitmap, indices
        // and scalars live in `self` for the call, which copies them, as many as `points` and
        // `queries` say.
        call("starting the witness MSMs", |msg| unsafe {
            sys::cuzk_gpu_split_witness_start(ctx, &points, &queries, implementation(*msm, sizes.h as usize), &mut out, msg)
        })?;
        // SAFETY: made by cuzk_gpu_split_witness_start in this context, owned here.
        let object = unsafe { ContextObject::new(out, life, sys::cuzk_gpu_split_witness_free, "the witness MSMs in flight")? };
        Ok(SplitWitnessInFlight(object))
    }

    /// H's MSM on `device` (cuda/split.cuh) while `witness` runs, then every sum: H's scalars
    /// the coefficients the quotient stage left in buffer set `set`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_at_once(
        &self,
        device: &Device,
        set: u32,
        lg_domain: u32,
        src: &PointSource,
        sizes: &QuerySizes,
        witness: SplitWitnessInFlight,
    ) -> Result<AtOnce> {
        let QueryMsms::Split { msm, .. } = self else {
            return Err(Error::internal("split MSMs at once without a split plan"));
        };
        let h_points = src.points(sys::QUERY_H);
        let ctx = device.ctx.ptr()?;
        let mut done = AtOnce::outputs();
        let (g1_out, g2_out, times) = done.out();
        // SAFETY: H's points are resident (split_runs_at_once); `witness` was started in this
        // context (the turn held since), over points the call keeps resident.
        call("the MSMs at once", |msg| unsafe {
            sys::cuzk_gpu_split_msms_at_once(
                ctx,
                set,
                lg_domain,
                &h_points,
                witness.0.ptr(),
                implementation(*msm, sizes.h as usize),
                g1_out,
                g2_out,
                times,
                msg,
            )
        })?;
        Ok(done)
    }
}

/// A split witness's MSMs running on the device ([`QueryMsms::start_split_witness`]); dropped
/// unfinished (a failed call), its device memory is freed after their kernels.
pub(super) struct SplitWitnessInFlight(ContextObject<sys::SplitWitness>);

impl GpuBackend {
    /// The whole B_G2 MSM on the device: batch addition of the 1-scalars (`ones_bitmap`,
    /// timed into batch_add), then the tail (into msm_b_g2).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn b_g2_msm(
        device: &Device,
        src: &PointSource,
        classes: &ClassifiedScalars,
        ones_bitmap: &[u32],
        msm: MsmChoice,
        staging: &sys::Staging,
        pool: &ThreadPool,
        t: &mut Timings,
    ) -> Result<G2Projective> {
        let query = src.points(sys::QUERY_B_G2);
        let start = Instant::now();
        let ones = if classes.ones.is_empty() {
            G2Projective::identity()
        } else {
            Self::batch_add_g2(device, &query, ones_bitmap, staging)?
        };
        t.batch_add_ns += nanos(start.elapsed());
        let start = Instant::now();
        let gathered = host_tail(src.streamed_g2(), classes, pool);
        let tail_points = match &gathered {
            None => query,
            Some(points) => src.gathered(sys::QUERY_B_G2, points),
        };
        let tail = Self::tail_msm_g2(device, &tail_points, classes, msm)?;
        t.msm_b_g2_ns += nanos(start.elapsed());
        Ok(ones + tail)
    }
}

/// The tail's points as the device reads them from the host: None for a resident key (the
/// device gathers them, or reads a dense tail in place); else, from the streamed key's host
/// copy of the query `streamed`, the gathered tail points, or the whole query for a dense tail.
fn host_tail<'p, P: Copy + Send + Sync>(streamed: Option<&'p [P]>, classes: &ClassifiedScalars, pool: &ThreadPool) -> Option<Cow<'p, [P]>> {
    let points = streamed?;
    Some(match classes.dense {
        true => Cow::Borrowed(points),
        false => Cow::Owned(pool.install(|| gather_tail(points, classes))),
    })
}
