// Package model is the one clock-free state machine of CUDA's semantics that
// cuzk's devices share: streams with FIFO queues, the waits of one stream on
// another, host waits (stream, event and device-wide synchronization), the
// VRAM ledger and the stream-ordered pool with its pending, completed and
// observed frees (docs/cuda-facts.md has the measurements it reproduces).
//
// It holds no clock, starts no goroutine and never sleeps. A driver feeds it
// "this host call is made now" (Device.Submit) and "this piece of device work
// has ended" (Streams.Finish), and carries out, in order, the Outputs it
// returns: start this item's work, this item is complete, this host wait is
// met. The emulated device (gpu/emu) drives it with goroutines and the wall
// clock, the simulator (sim) with its event heap and virtual clock, and the
// real device (gpuprove) orders its CUDA streams with Streams alone, so the
// semantics cannot drift apart. What work costs — how long a kernel or a copy
// takes, how engines are shared, what growing the pool costs — is the
// driver's, not the model's.
//
// A stream item is Enqueued, then Started (device work handed to the driver),
// then Complete; a host wait is Waiting, Met, Observed (the host returned and
// saw the frees it covered), then Returned. The host side and the device side
// are kept apart so that a later driver can let a launch or a cudaFreeAsync
// return at enqueue and observe its completion afterwards.
package model
