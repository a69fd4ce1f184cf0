//! MSMs whose scalars are the witness itself, read on the device (cuda/witness_msm.cuh): for a
//! mostly full-width witness (a PoSt's), sent whole for the R1CS stage, L takes z's aux values
//! in place and A and B the values of their variables, selected on the device. The host only
//! makes the two selections' bitmaps (a bit per value of z): no canonical copy of a query's
//! scalars (for a 32GiB WindowPoSt partition, 3 × 4 GB of host writes, 2.3–3.3 s of prep_msm).

use std::ffi::c_int;
use std::sync::{Arc, Mutex, MutexGuard};

use rayon::prelude::*;

use super::device::Device;
use super::msm::implementation;
use super::selection::DeviceSelection;
use super::sys::{self, call};
use super::GpuBackend;
use crate::backend::MsmChoice;
use crate::error::Result;
use crate::groth16::MsmResults;
use crate::groth16::QueryLayout;
use crate::synthesis::r1cs::CircuitShape;
use crate::synthesis::Density;
use crate::timings::{timed, Timings};

/// Values of z per bitmap word.
const PER_WORD: usize = 32;
/// Bitmap words per parallel task.
const WORDS_PER_TASK: usize = 1 << 12;

/// Which values of z one query takes as its scalars, in order.
pub(super) enum WitnessQuery {
    /// z[first..]: the L query's (the aux values).
    From(usize),
    /// The values whose bit is set (bit v of word v / 32), `offsets[w]` of them before word w;
    /// `resident` the same selection on the device while the call holds it (selection.rs).
    Selected {
        bitmap: Vec<u32>,
        offsets: Vec<u32>,
        resident: Mutex<Option<Arc<DeviceSelection>>>,
    },
}

impl WitnessQuery {
    /// The values of the variables with a point in a query: the inputs `input` keeps, then the
    /// aux values `aux` keeps (bellperson's query layout, [`QueryLayout`]), on all cores.
    fn selected(num_inputs: usize, input: &(dyn Fn(usize) -> bool + Sync), aux: &Density) -> Self {
        let z_len = num_inputs + aux.len();
        let keeps = |v: usize| if v < num_inputs { input(v) } else { aux.get(v - num_inputs) };
        // The 32 bits of the aux density from bit `start` on (none past its end).
        let aux_words = aux.words();
        let aux_bits = |start: usize| -> u32 {
            let (w, shift) = (start / 64, start % 64);
            let low = aux_words.get(w).map_or(0, |&word| word >> shift);
            let high = match shift {
                0 => 0,
                _ => aux_words.get(w + 1).map_or(0, |&word| word << (64 - shift)),
            };
            (low | high) as u32
        };
        let mut bitmap = vec![0u32; z_len.div_ceil(PER_WORD)];
        bitmap.par_chunks_mut(WORDS_PER_TASK).enumerate().for_each(|(task, words)| {
            for (w, word) in words.iter_mut().enumerate() {
                let first = (task * WORDS_PER_TASK + w) * PER_WORD;
                *word = match first >= num_inputs {
                    // Past the inputs a word is 32 bits of the aux density at once.
                    true => aux_bits(first - num_inputs),
                    false => (first..z_len.min(first + PER_WORD)).fold(0, |word, v| word | u32::from(keeps(v)) << (v % PER_WORD)),
                };
            }
        });
        let offsets = bitmap
            .iter()
            .scan(0u32, |before, &word| {
                let offset = *before;
                *before += word.count_ones();
                Some(offset)
            })
            .collect();
        WitnessQuery::Selected {
            bitmap,
            offsets,
            resident: Mutex::new(None),
        }
    }

    fn raw(&self, z_len: usize) -> sys::WitnessScalars {
        let (first, selected, selected_offsets, resident) = match self {
            WitnessQuery::From(first) => (*first, std::ptr::null(), std::ptr::null(), std::ptr::null()),
            WitnessQuery::Selected { bitmap, offsets, resident } => (
                0,
                bitmap.as_ptr(),
                offsets.as_ptr(),
                held(resident).as_ref().map_or(std::ptr::null(), |r| r.ptr()),
            ),
        };
        sys::WitnessScalars {
            z_len,
            first,
            selected,
            selected_offsets,
            resident,
        }
    }

    /// The number of values selected.
    fn len(&self, z_len: usize) -> usize {
        match self {
            WitnessQuery::From(first) => z_len.saturating_sub(*first),
            WitnessQuery::Selected { bitmap, offsets, .. } => match (bitmap.last(), offsets.last()) {
                (Some(&word), Some(&before)) => before as usize + word.count_ones() as usize,
                _ => 0,
            },
        }
    }
}

/// The scalars of a circuit's L, A and B queries (B_G1 and B_G2 share B's) as values of its
/// witness on the device.
pub(super) struct WitnessMsms {
    z_len: usize,
    pub(super) l: WitnessQuery,
    pub(super) a: WitnessQuery,
    pub(super) b: WitnessQuery,
    /// Which MSM computes them (msm.rs picks per size).
    msm: MsmChoice,
}

impl WitnessMsms {
    /// A's points are all inputs, then the aux variables in A; B's the inputs in B, then the
    /// aux variables in B; L's the aux variables.
    pub(super) fn new(layout: &QueryLayout, a_aux_density: &Density, b_input_density: &Density, b_aux_density: &Density, msm: MsmChoice) -> Self {
        let num_inputs = layout.num_inputs;
        let (a, b) = rayon::join(
            || WitnessQuery::selected(num_inputs, &|_| true, a_aux_density),
            || WitnessQuery::selected(num_inputs, &|i| b_input_density.get(i), b_aux_density),
        );
        WitnessMsms {
            z_len: num_inputs + a_aux_density.len(),
            l: WitnessQuery::From(num_inputs),
            a,
            b,
            msm,
        }
    }

    /// Whether the MSMs run at once: cuzk's MSM chosen and every G1 query (`g1_points`: H, L,
    /// A, B_G1) of 1 to [`AT_ONCE_MAX_POINTS`] points.
    pub(super) fn run_at_once(&self, g1_points: [usize; 4]) -> bool {
        self.msm.is_cuzk() && g1_points.iter().all(|&n| (1..=AT_ONCE_MAX_POINTS).contains(&n))
    }

    fn raw_scalars(&self) -> [sys::WitnessScalars; 3] {
        [self.l.raw(self.z_len), self.a.raw(self.z_len), self.b.raw(self.z_len)]
    }

    /// `query`'s scalars as the device takes them (`query` one of `l`, `a`, `b`).
    pub(super) fn scalars(&self, query: &WitnessQuery) -> sys::WitnessScalars {
        query.raw(self.z_len)
    }

    pub(super) fn msm(&self) -> MsmChoice {
        self.msm
    }

    /// Takes A's and B's selections from those `device` keeps with `shape` (resident there),
    /// sending this call's first when it has none yet (timed with the shape's upload): a
    /// shape's calls make the same selections (from its densities). Left to each MSM to send
    /// when the device cannot keep them. Held until [`Self::hold`]'s guard drops them.
    pub(super) fn keep_resident(&self, device: &Device, shape: &Arc<CircuitShape>, staging: &sys::Staging, t: &mut Timings) -> Result<()> {
        let (WitnessQuery::Selected { resident: a, .. }, WitnessQuery::Selected { resident: b, .. }) = (&self.a, &self.b) else {
            return Ok(());
        };
        let upload = |query: &WitnessQuery| DeviceSelection::upload(&device.ctx, &self.scalars(query), query.len(self.z_len), staging);
        let both = || timed(&mut t.shape_upload_ns, || Ok([upload(&self.a)?, upload(&self.b)?]));
        if let Some([on_a, on_b]) = device.shape_selections(shape, both)? {
            *held(a) = Some(on_a);
            *held(b) = Some(on_b);
        }
        Ok(())
    }

    /// A guard that drops the resident selections this call took when it goes: inside the
    /// device turn, so that no device memory is freed outside it or after a fault was
    /// recovered from (the context reset, its old addresses another allocation's).
    pub(super) fn hold(&self) -> ResidentHold<'_> {
        ResidentHold(self)
    }
}

/// See [`WitnessMsms::hold`].
pub(super) struct ResidentHold<'a>(&'a WitnessMsms);

impl Drop for ResidentHold<'_> {
    fn drop(&mut self) {
        for query in [&self.0.a, &self.0.b] {
            if let WitnessQuery::Selected { resident, .. } = query {
                *held(resident) = None;
            }
        }
    }
}

fn held(resident: &Mutex<Option<Arc<DeviceSelection>>>) -> MutexGuard<'_, Option<Arc<DeviceSelection>>> {
    resident.lock().unwrap_or_else(|p| p.into_inner())
}

/// `cuzk_gpu_witness_msm` (G1) or `cuzk_gpu_witness_msm_g2` (G2), the sum written to `Out`.
pub(super) type WitnessMsmEntry<Out> = unsafe extern "C" fn(
    *mut sys::Context,
    u32,
    *const sys::Points,
    *const sys::WitnessScalars,
    u32,
    *const sys::Staging,
    *mut Out,
    *mut sys::Message,
) -> c_int;

/// The most points of a query whose MSMs (H's and the witness's) run at once by cuzk's MSM
/// (`MsmChoice::is_cuzk`), with one make-way before them (a 32GiB WinningPoSt's ~370k points: 31 ms
/// for the five, against 0.115 s by sppark's one after another; docs/PERFORMANCE.md); beyond,
/// one after another, with room to make way between them.
pub(super) const AT_ONCE_MAX_POINTS: usize = 1 << 20;

/// What the device gives for MSMs run at once ([`GpuBackend::witness_msms_at_once`],
/// `QueryMsms::split_at_once`): the H, L, A, B_G1 sums, B_G2's, and in ns each MSM's own time
/// (H, L, A, B_G1, B_G2), the batch additions' (0 without a split), then their wall time.
pub(super) struct AtOnce {
    g1: [sys::G1; 4],
    b_g2: sys::G2,
    times: [u64; 7],
}

impl AtOnce {
    /// The device's outputs, for an entry to fill.
    pub(super) fn outputs() -> Self {
        AtOnce {
            g1: Default::default(),
            b_g2: sys::G2::default(),
            times: [0; 7],
        }
    }

    pub(super) fn out(&mut self) -> (&mut [sys::G1; 4], &mut sys::G2, &mut [u64; 7]) {
        (&mut self.g1, &mut self.b_g2, &mut self.times)
    }

    /// The sums, their times added to `t`: each to its phase, the wall time to msm_at_once.
    pub(super) fn results(self, t: &mut Timings) -> MsmResults {
        let [h_ns, l_ns, a_ns, b_g1_ns, b_g2_ns, batch_ns, wall_ns] = self.times;
        t.msm_h_ns += h_ns;
        t.msm_l_ns += l_ns;
        t.msm_a_ns += a_ns;
        t.msm_b_g1_ns += b_g1_ns;
        t.msm_b_g2_ns += b_g2_ns;
        t.batch_add_ns += batch_ns;
        t.msm_at_once_ns += wall_ns;
        let [h, l, a, b_g1] = self.g1.each_ref().map(sys::to_projective);
        MsmResults {
            h,
            l,
            a,
            b_g1,
            b_g2: sys::to_projective_g2(&self.b_g2),
        }
    }
}

impl GpuBackend {
    /// Σ sᵢ·Pᵢ over `points` (the query's, resident or on the host), sᵢ the values `query`
    /// names in the witness the device holds in buffer set `set`, by `entry` (G1 or G2) with
    /// the MSM `msms` chose for the size.
    pub(super) fn witness_msm<Out: Default>(
        entry: WitnessMsmEntry<Out>,
        device: &Device,
        set: u32,
        points: &sys::Points,
        msms: &WitnessMsms,
        query: &WitnessQuery,
        staging: &sys::Staging,
    ) -> Result<Out> {
        let ctx = device.ctx.ptr()?;
        let scalars = msms.scalars(query);
        let implementation = implementation(msms.msm, points.n);
        let mut out = Out::default();
        // SAFETY: the selection's vectors cover z_len values and outlive the synchronous call;
        // the device checks them and the witness's length before reading.
        call("witness MSM", |msg| unsafe {
            entry(ctx, set, points, &scalars, implementation, staging, &mut out, msg)
        })?;
        Ok(out)
    }

    /// H, L, A, B_G1, B_G2 (`points`) by cuzk's MSM, each on a stream of its own, all at the
    /// same time: H's scalars the coefficients the quotient stage left in buffer set `set` for
    /// the domain of 2^`lg_domain`, the others' read from the witness the device holds there.
    pub(super) fn witness_msms_at_once(
        device: &Device,
        set: u32,
        lg_domain: u32,
        points: &[sys::Points; 5],
        msms: &WitnessMsms,
        staging: &sys::Staging,
    ) -> Result<AtOnce> {
        let ctx = device.ctx.ptr()?;
        let scalars = msms.raw_scalars();
        let mut done = AtOnce::outputs();
        let (g1, g2, times) = done.out();
        // SAFETY: the points, selections and outputs outlive the synchronous call; the device
        // checks the selections, the witness's and H's lengths and the query sizes before reading.
        call("MSMs at once", |msg| unsafe {
            sys::cuzk_gpu_witness_msms_at_once(ctx, set, lg_domain, points, &scalars, staging, g1, g2, times, msg)
        })?;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_keeps_the_query_variables_in_order_and_counts_them_per_word() {
        // Inputs ending inside a word, on a word's end and on a density word's end.
        for (num_inputs, aux_len) in [(3, 3 * WORDS_PER_TASK * PER_WORD + 45), (1, 1), (32, 100), (33, 64), (64, 200), (100, 7)] {
            let mut aux = Density::with_len(aux_len);
            (0..aux_len)
                .filter(|i| i % 7 == 2 || i % 5 == 0 || *i == aux_len - 1)
                .for_each(|i| aux.set(i));
            let input = |i: usize| i != 1;
            let WitnessQuery::Selected { bitmap, offsets, .. } = WitnessQuery::selected(num_inputs, &input, &aux) else {
                panic!("a selection");
            };
            let kept: Vec<usize> = (0..num_inputs + aux_len)
                .filter(|&v| if v < num_inputs { input(v) } else { aux.get(v - num_inputs) })
                .collect();
            let from_bitmap: Vec<usize> = (0..bitmap.len() * PER_WORD)
                .filter(|&v| bitmap[v / PER_WORD] >> (v % PER_WORD) & 1 == 1)
                .collect();
            assert_eq!(from_bitmap, kept, "{num_inputs} inputs, {aux_len} aux");
            for (w, &offset) in offsets.iter().enumerate() {
                assert_eq!(offset as usize, kept.iter().filter(|&&v| v < w * PER_WORD).count(), "word {w}");
            }
        }
    }
}
