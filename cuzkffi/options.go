package cuzkffi

import "math"

// Priority is the class of a call's work, by deadline (cuzk_prove_options.priority). A class
// takes each GPU before waiting calls of lower classes, so it overtakes a running batch at the
// batch's next partition boundary; within a class calls take the GPU in arrival order. From
// the top: WinningPoSt (block production, seconds of slack), WindowPoSt (minutes), sealing
// (hours). The cuzk build checks the values against the header's CUZK_PRIORITY_*.
type Priority uint32

const (
	// PriorityNormal is the proof kind's own class: WinningPoSt's calls the top class
	// (PriorityHigh), WindowPoSt's PriorityWindowPoSt, PoRep C2's PrioritySealing. The default.
	PriorityNormal Priority = 0
	// PriorityHigh is the top class, WinningPoSt's: before every other class, and its calls
	// never wait for the host memory budget.
	PriorityHigh Priority = 1
	// PriorityWindowPoSt is the WindowPoSt class: after the top class, before sealing work.
	PriorityWindowPoSt Priority = 2
	// PrioritySealing is the sealing class (PoRep C2), after every other.
	PrioritySealing Priority = 3
)

// ProveOption changes how a proving call (the ...WithOptions functions, SealCommitPhase2Batch,
// GenerateUpdateProofBatch) proves.
type ProveOption func(*proveConfig)

type proveConfig struct {
	priority   Priority
	pinDevice  bool
	device     int
	partitions *[]Timings
}

// WithPriority sets the call's class (PriorityNormal, the proof kind's own, by default).
func WithPriority(p Priority) ProveOption {
	return func(c *proveConfig) { c.priority = p }
}

// WithDevice runs the call's GPU phases on CUDA device ordinal instead of the least busy one.
// On an engine without GPUs (Config.CPUOnly, or none present) the call fails with
// ErrInvalidArgument.
func WithDevice(ordinal int) ProveOption {
	return func(c *proveConfig) { c.pinDevice, c.device = true, ordinal }
}

// WithPartitionTimings makes a ...WithOptions call store the timings of each partition in
// *dst, in order (the batch calls always give them in SectorResult.Partitions).
func WithPartitionTimings(dst *[]Timings) ProveOption {
	return func(c *proveConfig) { c.partitions = dst }
}

func proveConfigOf(opts []ProveOption) proveConfig {
	var c proveConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// check refuses options the C struct cannot carry (the library refuses an unknown priority).
func (c proveConfig) check() error {
	if c.pinDevice && (c.device < 0 || c.device > math.MaxUint32) {
		return newError(StatusInvalidArgument, "device %d out of range", c.device)
	}
	return nil
}
