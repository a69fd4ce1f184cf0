//go:build cuzk

package cuzkffi

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import "unsafe"

// The Go constants of the C ABI's enums (see engine_cuzk.go for the statuses).
var (
	_ = [1]struct{}{}[BackendNone-C.CUZK_BACKEND_KIND_NONE]
	_ = [1]struct{}{}[BackendCPU-C.CUZK_BACKEND_KIND_CPU]
	_ = [1]struct{}{}[BackendGPU-C.CUZK_BACKEND_KIND_GPU]
	_ = [1]struct{}{}[KeyNotOnGPU-C.CUZK_KEY_RESIDENCY_NOT_ON_GPU]
	_ = [1]struct{}{}[KeyResident-C.CUZK_KEY_RESIDENCY_RESIDENT]
	_ = [1]struct{}{}[KeyStreamed-C.CUZK_KEY_RESIDENCY_STREAMED]
	_ = [1]struct{}{}[PriorityNormal-C.CUZK_PRIORITY_NORMAL]
	_ = [1]struct{}{}[PriorityHigh-C.CUZK_PRIORITY_HIGH]
	_ = [1]struct{}{}[PriorityWindowPoSt-C.CUZK_PRIORITY_WINDOW_POST]
	_ = [1]struct{}{}[PrioritySealing-C.CUZK_PRIORITY_SEALING]
)

// rawTimingsOf reads the library's timings as their Go mirror, which has the same layout (the
// checks below).
func rawTimingsOf(ct *C.cuzk_timings) *rawTimings {
	return (*rawTimings)(unsafe.Pointer(ct))
}

// rawTimings is cuzk_timings byte for byte: the same size, and every field of one is a field of
// the other, of the same integer type (the helper's Go type; the C side's by its underlying
// type) at the same offset (the index is 0 only then; a negative difference overflows uintptr).
// A change of the header's struct fails the build here until rawTimings follows it.
var _ = [1]struct{}{}[unsafe.Sizeof(C.cuzk_timings{})-unsafe.Sizeof(rawTimings{})]
var _ = [1]struct{}{}[unsafe.Sizeof(rawTimings{})-unsafe.Sizeof(C.cuzk_timings{})]

func u32[CT ~uint32](*CT, *uint32, struct{}) {}
func i32[CT ~int32](*CT, *int32, struct{})   {}
func u64[CT ~uint64](*CT, *uint64, struct{}) {}

func _(c *C.cuzk_timings, r *rawTimings) {
	u32(&c.struct_size, &r.struct_size, [1]struct{}{}[unsafe.Offsetof(c.struct_size)-unsafe.Offsetof(r.struct_size)])
	u32(&c.version, &r.version, [1]struct{}{}[unsafe.Offsetof(c.version)-unsafe.Offsetof(r.version)])
	u32(&c.backend, &r.backend, [1]struct{}{}[unsafe.Offsetof(c.backend)-unsafe.Offsetof(r.backend)])
	i32(&c.device_index, &r.device_index, [1]struct{}{}[unsafe.Offsetof(c.device_index)-unsafe.Offsetof(r.device_index)])
	u32(&c.partitions, &r.partitions, [1]struct{}{}[unsafe.Offsetof(c.partitions)-unsafe.Offsetof(r.partitions)])
	u32(&c.domain_log2, &r.domain_log2, [1]struct{}{}[unsafe.Offsetof(c.domain_log2)-unsafe.Offsetof(r.domain_log2)])
	u64(&c.num_constraints, &r.num_constraints, [1]struct{}{}[unsafe.Offsetof(c.num_constraints)-unsafe.Offsetof(r.num_constraints)])
	u64(&c.total_ns, &r.total_ns, [1]struct{}{}[unsafe.Offsetof(c.total_ns)-unsafe.Offsetof(r.total_ns)])
	u64(&c.queue_wait_ns, &r.queue_wait_ns, [1]struct{}{}[unsafe.Offsetof(c.queue_wait_ns)-unsafe.Offsetof(r.queue_wait_ns)])
	u64(&c.srs_load_ns, &r.srs_load_ns, [1]struct{}{}[unsafe.Offsetof(c.srs_load_ns)-unsafe.Offsetof(r.srs_load_ns)])
	u64(&c.input_check_ns, &r.input_check_ns, [1]struct{}{}[unsafe.Offsetof(c.input_check_ns)-unsafe.Offsetof(r.input_check_ns)])
	u64(&c.synthesis_ns, &r.synthesis_ns, [1]struct{}{}[unsafe.Offsetof(c.synthesis_ns)-unsafe.Offsetof(r.synthesis_ns)])
	u64(&c.prep_msm_ns, &r.prep_msm_ns, [1]struct{}{}[unsafe.Offsetof(c.prep_msm_ns)-unsafe.Offsetof(r.prep_msm_ns)])
	u64(&c.pin_h2d_ns, &r.pin_h2d_ns, [1]struct{}{}[unsafe.Offsetof(c.pin_h2d_ns)-unsafe.Offsetof(r.pin_h2d_ns)])
	u64(&c.ntt_ns, &r.ntt_ns, [1]struct{}{}[unsafe.Offsetof(c.ntt_ns)-unsafe.Offsetof(r.ntt_ns)])
	u64(&c.msm_h_ns, &r.msm_h_ns, [1]struct{}{}[unsafe.Offsetof(c.msm_h_ns)-unsafe.Offsetof(r.msm_h_ns)])
	u64(&c.batch_add_ns, &r.batch_add_ns, [1]struct{}{}[unsafe.Offsetof(c.batch_add_ns)-unsafe.Offsetof(r.batch_add_ns)])
	u64(&c.msm_l_ns, &r.msm_l_ns, [1]struct{}{}[unsafe.Offsetof(c.msm_l_ns)-unsafe.Offsetof(r.msm_l_ns)])
	u64(&c.msm_a_ns, &r.msm_a_ns, [1]struct{}{}[unsafe.Offsetof(c.msm_a_ns)-unsafe.Offsetof(r.msm_a_ns)])
	u64(&c.msm_b_g1_ns, &r.msm_b_g1_ns, [1]struct{}{}[unsafe.Offsetof(c.msm_b_g1_ns)-unsafe.Offsetof(r.msm_b_g1_ns)])
	u64(&c.msm_b_g2_ns, &r.msm_b_g2_ns, [1]struct{}{}[unsafe.Offsetof(c.msm_b_g2_ns)-unsafe.Offsetof(r.msm_b_g2_ns)])
	u64(&c.assembly_ns, &r.assembly_ns, [1]struct{}{}[unsafe.Offsetof(c.assembly_ns)-unsafe.Offsetof(r.assembly_ns)])
	u64(&c.verify_ns, &r.verify_ns, [1]struct{}{}[unsafe.Offsetof(c.verify_ns)-unsafe.Offsetof(r.verify_ns)])
	u64(&c.srs_upload_ns, &r.srs_upload_ns, [1]struct{}{}[unsafe.Offsetof(c.srs_upload_ns)-unsafe.Offsetof(r.srs_upload_ns)])
	u64(&c.pin_ns, &r.pin_ns, [1]struct{}{}[unsafe.Offsetof(c.pin_ns)-unsafe.Offsetof(r.pin_ns)])
	u32(&c.key_residency, &r.key_residency, [1]struct{}{}[unsafe.Offsetof(c.key_residency)-unsafe.Offsetof(r.key_residency)])
	u32(&c.r1cs_synthesis, &r.r1cs_synthesis, [1]struct{}{}[unsafe.Offsetof(c.r1cs_synthesis)-unsafe.Offsetof(r.r1cs_synthesis)])
	u64(&c.shape_extract_ns, &r.shape_extract_ns, [1]struct{}{}[unsafe.Offsetof(c.shape_extract_ns)-unsafe.Offsetof(r.shape_extract_ns)])
	u64(&c.witness_ns, &r.witness_ns, [1]struct{}{}[unsafe.Offsetof(c.witness_ns)-unsafe.Offsetof(r.witness_ns)])
	u64(&c.spmv_ns, &r.spmv_ns, [1]struct{}{}[unsafe.Offsetof(c.spmv_ns)-unsafe.Offsetof(r.spmv_ns)])
	u64(&c.shape_upload_ns, &r.shape_upload_ns, [1]struct{}{}[unsafe.Offsetof(c.shape_upload_ns)-unsafe.Offsetof(r.shape_upload_ns)])
	u64(&c.witness_upload_ns, &r.witness_upload_ns, [1]struct{}{}[unsafe.Offsetof(c.witness_upload_ns)-unsafe.Offsetof(r.witness_upload_ns)])
	u32(&c.spmv_on_device, &r.spmv_on_device, [1]struct{}{}[unsafe.Offsetof(c.spmv_on_device)-unsafe.Offsetof(r.spmv_on_device)])
	u32(&c.reserved, &r.reserved, [1]struct{}{}[unsafe.Offsetof(c.reserved)-unsafe.Offsetof(r.reserved)])
	u64(&c.proving_wait_ns, &r.proving_wait_ns, [1]struct{}{}[unsafe.Offsetof(c.proving_wait_ns)-unsafe.Offsetof(r.proving_wait_ns)])
	u32(&c.sector_index, &r.sector_index, [1]struct{}{}[unsafe.Offsetof(c.sector_index)-unsafe.Offsetof(r.sector_index)])
	i32(&c.partition_index, &r.partition_index, [1]struct{}{}[unsafe.Offsetof(c.partition_index)-unsafe.Offsetof(r.partition_index)])
	u64(&c.msm_at_once_ns, &r.msm_at_once_ns, [1]struct{}{}[unsafe.Offsetof(c.msm_at_once_ns)-unsafe.Offsetof(r.msm_at_once_ns)])
}

// maxPartitions is the most partitions a sector has: an update proof's (32GiB and 64GiB: 16;
// a PoRep sector has at most 10), so that every partition of every sector of a call is
// reported (the library drops those past the array).
const maxPartitions = C.CUZK_MAX_UPDATE_PARTITIONS

// partitionTimings is a C array for the library to write n sectors' partition timings into.
type partitionTimings []C.cuzk_timings

func newPartitionTimings(sectors int) partitionTimings {
	pt := partitionTimings(cArray[C.cuzk_timings](sectors * maxPartitions))
	for i := range pt {
		pt[i].struct_size = C.uint32_t(unsafe.Sizeof(pt[i]))
	}
	return pt
}

// setIn points opts at the array.
func (pt partitionTimings) setIn(opts *C.cuzk_prove_options) {
	opts.partition_timings = &pt[0]
	opts.partition_timings_len = C.size_t(len(pt))
}

// of returns the timings the library wrote for sector i (entries it did not write keep a
// zero version).
func (pt partitionTimings) of(sector int) []Timings {
	var out []Timings
	for i := range pt {
		if pt[i].version != 0 && int(pt[i].sector_index) == sector {
			out = append(out, timingsFromC(rawTimingsOf(&pt[i])))
		}
	}
	return out
}

func (pt partitionTimings) free() {
	C.free(unsafe.Pointer(&pt[0]))
}
