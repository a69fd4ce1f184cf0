//! The witness MSMs beside H's (cuda/beside_h.cuh): a classified witness's L, A, B_G1 and B_G2
//! MSMs (witness_classes.rs) run on a host thread and a device stream of their own while the
//! first part of H's MSM runs, both done when that part's call returns. Taken when the device
//! has memory free for both beside what the call holds (never by evicting a key, so the key's
//! residency and the call's plan are those of the MSMs one after another); else the witness
//! MSMs run after H's MSM. Their times: each MSM's own duration in its phase, the classes'
//! device time logged (it is inside the group), and the group's wall in `msm_at_once_ns`.

use blstrs::{G1Projective, G2Projective};

use super::device::Device;
use super::split::TailPlan;
use super::sys::{self, call};
use super::witness_classes::{log_times, ClassifiedMsms};
use super::{classes_bytes, h_chunk_bytes, ones_bitmap_bytes, witness_tails_bytes, MsmPlan};
use crate::error::Result;
use crate::groth16::QuerySizes;
use crate::timings::Timings;

/// The witness MSMs of one call, to run beside the first part of its H MSM, and their sums
/// once they have.
pub(super) struct WitnessBesideH {
    queries: sys::ClassifiedQueries,
    sums: Option<WitnessSums>,
}

/// L's, A's, B_G1's and B_G2's sums.
pub(super) struct WitnessSums {
    pub(super) l: G1Projective,
    pub(super) a: G1Projective,
    pub(super) b_g1: G1Projective,
    pub(super) b_g2: G2Projective,
}

/// The device memory H's largest part and a classified witness's MSMs with tails `tails` take
/// at once, beside the call's buffers: both MSMs' scratch, the ones' bitmap, the classes.
fn beside_bytes(sizes: &QuerySizes, plan: MsmPlan, tails: &[TailPlan; 4]) -> u64 {
    h_chunk_bytes(sizes, plan, false) + witness_tails_bytes(plan.choice, tails) + ones_bitmap_bytes(sizes) + classes_bytes(sizes)
}

impl WitnessBesideH {
    /// `msms` over `points` (L's, A's, B_G1's, B_G2's, resident) beside H's MSM, when the
    /// device has the memory both take free (inside the call's turn, its buffers held).
    pub(super) fn when_room(
        device: &Device,
        msms: &ClassifiedMsms,
        points: [sys::Points; 4],
        sizes: &QuerySizes,
        plan: MsmPlan,
    ) -> Result<Option<Self>> {
        let both = beside_bytes(sizes, plan, &msms.tail_plans());
        if !device.has_free(both)? {
            log::debug!(
                "device {}: no room for the witness MSMs beside H's ({} MiB): after it",
                device.ordinal,
                both >> 20
            );
            return Ok(None);
        }
        Ok(Some(WitnessBesideH {
            queries: msms.queries(points),
            sums: None,
        }))
    }

    /// H's chunk [first, first + count) over `h_points` (by `h_implementation`) with the
    /// witness MSMs beside it, on buffer set `set`: H's part's own time into `msm_h_ns`, each
    /// witness MSM's into its phase and `batch_add_ns`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(
        &mut self,
        device: &Device,
        set: u32,
        lg_domain: u32,
        h_points: &sys::Points,
        first: usize,
        count: usize,
        h_implementation: u32,
        t: &mut Timings,
    ) -> Result<sys::G1> {
        let ctx = device.ctx.ptr()?;
        let mut h = sys::G1::default();
        let mut g1: [sys::G1; 3] = Default::default();
        let mut b_g2 = sys::G2::default();
        let mut times = [0u64; 12];
        device.with_staging(t, |staging, _| {
            // SAFETY: the queries' points are resident and their selections live in the call's
            // `ClassifiedMsms` for the synchronous call; H's chunk lies inside its query
            // (check_key_fits); every output is a local of this frame.
            call("the witness MSMs beside H's", |msg| unsafe {
                sys::cuzk_gpu_h_msm_beside_witness(
                    ctx,
                    set,
                    lg_domain,
                    h_points,
                    first,
                    count,
                    h_implementation,
                    &self.queries,
                    staging,
                    &mut h,
                    &mut g1,
                    &mut b_g2,
                    &mut times,
                    msg,
                )
            })
        })?;
        let [h_ns, l_classes, l_batch, l_tail, a_classes, a_batch, a_tail, b_classes, b_g1_batch, b_g1_tail, b_g2_batch, b_g2_tail] = times;
        t.msm_h_ns += h_ns;
        t.msm_l_ns += l_tail;
        t.msm_a_ns += a_tail;
        t.msm_b_g1_ns += b_g1_tail;
        t.msm_b_g2_ns += b_g2_tail;
        t.batch_add_ns += l_batch + a_batch + b_g1_batch + b_g2_batch;
        log_times("L beside H", l_classes, l_batch, l_tail);
        log_times("A beside H", a_classes, a_batch, a_tail);
        log_times("B_G1 and B_G2 beside H", b_classes, b_g1_batch + b_g2_batch, b_g1_tail + b_g2_tail);
        let [l, a, b_g1] = g1.map(|p| sys::to_projective(&p));
        self.sums = Some(WitnessSums {
            l,
            a,
            b_g1,
            b_g2: sys::to_projective_g2(&b_g2),
        });
        Ok(h)
    }

    /// The witness's sums, once `run` has returned.
    pub(super) fn sums(self) -> Option<WitnessSums> {
        self.sums
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::call_memory_of;
    use crate::backend::gpu::tests::{msms, porep_32g};
    use crate::backend::MsmChoice;

    /// A 32GiB PoRep partition with its real tails (≈ 3 % of each query): beside H's part its
    /// witness MSMs add their scratch to the part's, ≈ 7 GB in all, which an H200 has free
    /// beside the resident key, the matrices and the call's buffers.
    #[test]
    fn a_32gib_porep_partitions_witness_msms_fit_beside_h_on_an_h200() {
        let (sizes, matrices) = porep_32g();
        let gathered = |points| TailPlan { points, gathered: true };
        let real = [gathered(3_900_000), gathered(3_900_000), gathered(1_000_000), gathered(1_000_000)];
        let plan = msms(MsmChoice::Cuzk);
        let (h_part, witness) = (h_chunk_bytes(&sizes, plan, false), witness_tails_bytes(plan.choice, &real));
        let both = beside_bytes(&sizes, plan, &real);
        assert!(
            both >= h_part + witness,
            "{both} bytes for a part of {h_part} and witness MSMs of {witness}"
        );
        assert!(both < 8 << 30, "{both} bytes");
        // Free when H's MSM starts: the device less the key, the matrices, the NTT and witness
        // buffers and the CUDA context (≈ 0.6 GB).
        let buffers = 3 * 32 * sizes.domain() + 32 * sizes.variables();
        let call = call_memory_of(&sizes, 0, false, plan, true, true, Some(&real));
        assert!(call.device_call_bytes >= buffers + h_part.max(witness));
        let free = |device_mib: u64| (device_mib << 20) - sizes.points_bytes() - matrices - buffers - (600 << 20);
        assert!(free(143_771) >= both + (4 << 30), "an H200 has {} MiB free", free(143_771) >> 20);
    }
}
