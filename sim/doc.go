// Package sim is the discrete-event simulator of cuzk: a virtual clock and
// event heap that implement actors.Runtime, so that the production actors run
// unchanged against models of the GPU (gpu.Device with CUDA's semantics) and of
// the host CPU (cores and memory bandwidth shared by the CPU stages).
//
// Nothing in a simulation reads the wall clock: time is the kernel's virtual
// clock, randomness comes from PCG sources seeded by the scenario, and actors run
// on protoactor's synchronized dispatcher so that each event is processed to
// quiescence before the next. The same scenario and seed give the same report,
// byte for byte.
//
// The models know CUDA, not lock designs: a design's fate (a device-wide sync
// that waits for another worker's kernels, a pre-staging allocation that does
// not fit) follows from the semantics in gpu/device.go and the costs in a
// profile. See docs/simulator.md.
package sim
