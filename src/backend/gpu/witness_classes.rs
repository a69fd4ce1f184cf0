//! prep_msm on the device (cuda/witness_classes.cuh): for a witness of mostly 0s and 1s (PoRep,
//! update) whose z the R1CS stage left on the device, each query's scalars (L's, A's, B's: the
//! selections witness_msm.rs makes) are sorted there into 0 / 1 / full-width, as
//! src/backend/prep.rs sorts them on the host, and each query's MSM is split as split.rs does
//! it: the 1-scalars' points by batch addition when the cost model says it pays, the rest by
//! the tail MSM. The host sends the selections' bitmaps and makes no classes, no bitmaps of
//! ones and no tails: at 32GiB those were ≈ 0.5 s of a partition's host work on 16 cores
//! (docs/PERFORMANCE.md).

use super::device::Device;
use super::msm::implementation;
use super::split::TailPlan;
use super::sys::{self, call};
use super::witness_msm::WitnessMsms;
use crate::backend::SplitPolicy;
use crate::error::{Error, Result};
use crate::groth16::QuerySizes;
use crate::synthesis::r1cs::CompactWitness;
use crate::timings::Timings;

/// The witness MSMs of one circuit with its classes found on the device.
pub(super) struct ClassifiedMsms {
    selections: WitnessMsms,
    /// The fewest 1-scalars for which L's and A's batch additions pay (the split policy's);
    /// B's classes, found once for B_G1 and B_G2, split whenever there are ones (as split.rs
    /// splits B_G2).
    split_min_ones: [u64; 2],
    /// The most scalars each query's tail can take (L, A, B_G1, B_G2), for the call's memory
    /// plan: the witness's full-width values, and its ones where the query's may go into the
    /// tail (fewer than the split's least), at most the query's points.
    tail_bounds: [u64; 4],
}

impl ClassifiedMsms {
    /// For a resident key of query sizes `sizes` and a witness whose values are `witness`.
    pub(super) fn new(selections: WitnessMsms, sizes: &QuerySizes, policy: SplitPolicy, witness: &CompactWitness) -> Self {
        let split_min_ones = [sizes.l, sizes.a].map(|n| policy.min_ones_to_split(n as usize, true));
        let (full, ones) = (witness.full.len() as u64, witness.count_ones());
        let min_ones = [split_min_ones[0], split_min_ones[1], 0, 0];
        let points = [sizes.l, sizes.a, sizes.b_g1, sizes.b_g2];
        let tail_bounds = [0, 1, 2, 3].map(|q| (full + ones.min(min_ones[q].saturating_sub(1))).min(points[q]));
        ClassifiedMsms {
            selections,
            split_min_ones,
            tail_bounds,
        }
    }

    pub(super) fn selections(&self) -> &WitnessMsms {
        &self.selections
    }

    /// The tails' plans (at most `tail_bounds`, gathered by index).
    pub(super) fn tail_plans(&self) -> [TailPlan; 4] {
        self.tail_bounds.map(|points| TailPlan { points, gathered: true })
    }

    /// G1 query `q`'s MSM (0: L, 1: A) over `points`, with z in the device's buffer set `set`:
    /// the classes' device time into `prep_ns` (logged apart at debug level: prep_msm holds the
    /// host's share too), the batch addition's into `batch_ns`, the tail's into `msm_ns`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn g1_msm(
        &self,
        q: usize,
        device: &Device,
        set: u32,
        points: &sys::Points,
        staging: &sys::Staging,
        msm_ns: &mut u64,
        prep_ns: &mut u64,
        batch_ns: &mut u64,
    ) -> Result<sys::G1> {
        let query = match q {
            0 => &self.selections.l,
            1 => &self.selections.a,
            _ => return Err(Error::internal("B's classified MSMs are B_G1's and B_G2's together")),
        };
        let ctx = device.ctx.ptr()?;
        let scalars = self.selections.scalars(query);
        let implementation = implementation(self.selections.msm(), points.n);
        let mut out = sys::G1::default();
        let mut times = [0u64; 3];
        // SAFETY: the selection's vectors cover z_len values and outlive the synchronous call;
        // the device checks them, the witness's length and the key's residency before reading.
        call("classified witness MSM", |msg| unsafe {
            sys::cuzk_gpu_classified_witness_msm(
                ctx,
                set,
                points,
                &scalars,
                self.split_min_ones[q],
                implementation,
                staging,
                &mut out,
                &mut times,
                msg,
            )
        })?;
        let [classes_ns, batch_add_ns, tail_ns] = times;
        *prep_ns += classes_ns;
        *batch_ns += batch_add_ns;
        *msm_ns += tail_ns;
        log_times(["L", "A"][q], classes_ns, batch_add_ns, tail_ns);
        Ok(out)
    }

    /// B_G1's and B_G2's MSMs over `points` (B_G1's, B_G2's) with B's classes found once:
    /// their device time into `prep_msm_ns`, the batch additions' into `batch_add_ns`, each
    /// tail's into its query's MSM phase.
    pub(super) fn b_msms(
        &self,
        device: &Device,
        set: u32,
        points: &[sys::Points; 2],
        staging: &sys::Staging,
        t: &mut Timings,
    ) -> Result<(sys::G1, sys::G2)> {
        let ctx = device.ctx.ptr()?;
        let scalars = self.selections.scalars(&self.selections.b);
        let implementation = implementation(self.selections.msm(), points[0].n);
        let (mut b_g1, mut b_g2) = (sys::G1::default(), sys::G2::default());
        let mut times = [0u64; 5];
        // SAFETY: as g1_msm's; both outputs and the points outlive the synchronous call.
        call("B's classified witness MSMs", |msg| unsafe {
            sys::cuzk_gpu_classified_b_msms(ctx, set, points, &scalars, implementation, staging, &mut b_g1, &mut b_g2, &mut times, msg)
        })?;
        let [classes_ns, g1_batch_ns, g1_tail_ns, g2_batch_ns, g2_tail_ns] = times;
        t.prep_msm_ns += classes_ns;
        t.batch_add_ns += g1_batch_ns + g2_batch_ns;
        t.msm_b_g1_ns += g1_tail_ns;
        t.msm_b_g2_ns += g2_tail_ns;
        log_times("B_G1 and B_G2", classes_ns, g1_batch_ns + g2_batch_ns, g1_tail_ns + g2_tail_ns);
        Ok((b_g1, b_g2))
    }
}

fn log_times(queries: &str, classes_ns: u64, batch_add_ns: u64, tail_ns: u64) {
    let ms = |ns: u64| ns as f64 / 1e6;
    log::debug!(
        "{queries}: classes on the device {:.2} ms, batch addition {:.2} ms, tail MSM {:.2} ms",
        ms(classes_ns),
        ms(batch_add_ns),
        ms(tail_ns)
    );
}

#[cfg(test)]
mod tests {
    use blstrs::Scalar;
    use ff::{Field, PrimeField};
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::backend::prep::{ClassifiedScalars, PreparedMsms};
    use crate::backend::MsmChoice;
    use crate::groth16::QueryLayout;
    use crate::synthesis::Density;

    /// The device's classes of one query as the host executor finds them.
    struct Found {
        ones: u64,
        split: bool,
        bitmap: Vec<u32>,
        tail_indices: Vec<u32>,
        tail_scalars: Vec<Scalar>,
    }

    fn classes_on_host(z: &[Scalar], scalars: &sys::WitnessScalars, npoints: usize, split_min_ones: u64) -> Result<Found> {
        let mut counts = [0u64; 3];
        let mut bitmap = vec![0u32; npoints.div_ceil(32)];
        let mut tail_indices = vec![0u32; npoints];
        let mut tail_values = vec![Scalar::ZERO; npoints];
        // SAFETY: z holds z_len Montgomery scalars (blstrs' layout), the selection's vectors
        // cover them, the outputs have room for npoints entries.
        call("the witness classes' host check", |msg| unsafe {
            sys::cuzk_gpu_witness_classes_check(
                z.as_ptr().cast(),
                scalars,
                npoints,
                split_min_ones,
                &mut counts,
                bitmap.as_mut_ptr(),
                tail_indices.as_mut_ptr(),
                tail_values.as_mut_ptr().cast(),
                msg,
            )
        })?;
        let [ones, full, split] = counts;
        let tail_n = (full + if split == 1 { 0 } else { ones }) as usize;
        tail_indices.truncate(tail_n);
        tail_values.truncate(tail_n);
        Ok(Found {
            ones,
            split: split == 1,
            bitmap,
            tail_indices,
            tail_scalars: tail_values,
        })
    }

    fn density(len: usize, keep: impl Fn(usize) -> bool) -> Density {
        let mut d = Density::with_len(len);
        (0..len).filter(|&i| keep(i)).for_each(|i| d.set(i));
        d
    }

    /// Each query's classes from the host executor of the device's steps equal prep.rs's, split
    /// or with the ones folded into the tail, for witnesses of 0s, 1s, full-width values, p − 1
    /// and every mix, over word boundaries and inputs that are not a multiple of 32.
    #[test]
    fn classes_found_as_the_device_does_equal_the_hosts() {
        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        for (num_inputs, aux_len, mix) in [
            (1usize, 0usize, 0u32),
            (1, 1, 1),
            (3, 29, 2),
            (33, 31, 2),
            (5, 4099, 0),
            (5, 4099, 1),
            (7, 70_001, 2),
            (64, 4096, 3),
        ] {
            let value = |rng: &mut rand_chacha::ChaCha20Rng| -> Scalar {
                match (mix, rng.gen_range(0..100)) {
                    (0, _) => Scalar::ZERO,
                    (1, _) => Scalar::ONE,
                    (3, _) => -Scalar::ONE,
                    (_, r) if r < 48 => Scalar::ZERO,
                    (_, r) if r < 95 => Scalar::ONE,
                    (_, r) if r < 97 => -Scalar::ONE,
                    _ => Scalar::random(&mut *rng),
                }
            };
            let z: Vec<Scalar> = (0..num_inputs + aux_len).map(|_| value(&mut rng)).collect();
            let (inputs, aux) = z.split_at(num_inputs);
            let a_aux = density(aux_len, |i| i % 3 != 1);
            let b_aux = density(aux_len, |i| i % 5 < 2 || i == aux_len - 1);
            let b_inputs = density(num_inputs, |i| i != 1);
            let layout = QueryLayout {
                num_inputs,
                b_inputs: b_inputs.count_ones(),
            };
            let host = PreparedMsms::classified(&layout, inputs, aux, &a_aux, &b_inputs, &b_aux);
            let selections = WitnessMsms::new(&layout, &a_aux, &b_inputs, &b_aux, MsmChoice::Cuzk);
            let what = format!("{num_inputs} inputs, {aux_len} aux, mix {mix}, seed {seed}");
            for (name, query, expected) in [
                ("L", &selections.l, &host.l),
                ("A", &selections.a, &host.a),
                ("B", &selections.b, &host.b),
            ] {
                let npoints = match name {
                    "L" => aux_len,
                    "A" => num_inputs + a_aux.count_ones(),
                    _ => layout.b_inputs + b_aux.count_ones(),
                };
                let scalars = selections.scalars(query);
                let ones = expected.ones.len() as u64;
                for split_min_ones in [0, ones, ones + 1, u64::MAX] {
                    let found = classes_on_host(&z, &scalars, npoints, split_min_ones).unwrap();
                    let what = format!("{name}, split from {split_min_ones} ones, {what}");
                    assert_eq!(found.ones, ones, "{what}");
                    assert_eq!(found.split, ones > 0 && ones >= split_min_ones, "{what}");
                    let mut want: ClassifiedScalars = expected.clone();
                    if found.split {
                        assert_eq!(found.bitmap, want.ones_bitmap(npoints), "{what}");
                    } else {
                        assert!(found.bitmap.iter().all(|&w| w == 0), "{what}: no bitmap written");
                        // The tail in point order, the ones among the full-width values.
                        let mut folded: Vec<(u32, [u8; 32])> = want.tail_indices.iter().copied().zip(want.tail_scalars.iter().copied()).collect();
                        folded.extend(want.ones.iter().map(|&i| (i, Scalar::ONE.to_repr())));
                        folded.sort_by_key(|&(i, _)| i);
                        want.tail_indices = folded.iter().map(|&(i, _)| i).collect();
                        want.tail_scalars = folded.iter().map(|&(_, s)| s).collect();
                    }
                    assert_eq!(found.tail_indices, want.tail_indices, "{what}");
                    let scalars: Vec<[u8; 32]> = found.tail_scalars.iter().map(|s| s.to_repr()).collect();
                    assert_eq!(scalars, want.tail_scalars, "{what}");
                }
            }
        }
    }

    /// A selection that does not take one value per point, or that reaches past z, is refused
    /// before anything is read.
    #[test]
    fn a_selection_that_does_not_fit_the_query_is_refused() {
        let z = vec![Scalar::ONE; 40];
        let aux = density(38, |i| i % 2 == 0);
        let layout = QueryLayout { num_inputs: 2, b_inputs: 2 };
        let selections = WitnessMsms::new(&layout, &aux, &density(2, |_| true), &aux, MsmChoice::Cuzk);
        let a = selections.scalars(&selections.a);
        assert!(classes_on_host(&z, &a, 21, 0).is_ok());
        for npoints in [20, 22] {
            let err = classes_on_host(&z, &a, npoints, 0).err().expect("refused");
            assert!(err.message.contains("one value per point"), "{err}");
        }
        let l = selections.scalars(&selections.l);
        assert!(classes_on_host(&z, &l, 38, 0).is_ok());
        let err = classes_on_host(&z, &l, 39, 0).err().expect("refused");
        assert!(err.message.contains("past `first`"), "{err}");
    }

    #[test]
    fn the_cost_models_fewest_ones_agree_with_it() {
        for resident in [true, false] {
            for npoints in [1usize, 17, 1000, 1 << 20, 130_000_000] {
                let min = SplitPolicy::CostModel.min_ones_to_split(npoints, resident);
                assert!(SplitPolicy::CostModel.split_pays(npoints, min as usize, resident), "{npoints}");
                assert!(
                    min == 0 || !SplitPolicy::CostModel.split_pays(npoints, min as usize - 1, resident),
                    "{npoints}"
                );
            }
        }
        assert_eq!(SplitPolicy::Always.min_ones_to_split(10, true), 0);
        assert_eq!(SplitPolicy::Never.min_ones_to_split(10, true), u64::MAX);
    }
}
