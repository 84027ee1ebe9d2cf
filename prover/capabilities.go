package prover

import (
	"fmt"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// Capabilities are what a backend can do beyond Backend's Stage and Compute.
// Every one is optional: a backend with none is the CPU's. CapabilitiesOf
// finds them, in this one place, so that callers ask for a capability by
// name instead of asserting interfaces of their own.
type Capabilities struct {
	// Prep lends Prep the memory of its vectors (the GPU backend: pinned
	// host buffers laid out as its device buffer); nil: Go memory.
	Prep PrepAllocator
	// ComputesBG2: Compute fills Computed.B2, so the b_g2 stage has nothing
	// left to do (BG2Computer).
	ComputesBG2 bool
	// Footprint is the device memory one partition of a key set holds
	// during stage and compute (Footprinter); nil: DeviceFootprint.
	Footprint func(k *Keys) int64
	// Staged is the part of the footprint Stage copies to the device (the
	// rest Compute copies in itself: StagedSizer); nil: all of it.
	Staged func(k *Keys) int64
	// Keys keeps key sets on devices between partitions; nil for a backend
	// that keeps none.
	Keys KeyPlacer
	// ConsumesPrepared: Compute overwrites the Prepared it was staged from
	// (the CPU backend computes in place), so a second compute of one
	// partition needs a new Prep (PreparedConsumer).
	ConsumesPrepared bool
	// Commitments computes the MSMs of gnark's commitments (the Pedersen
	// commitments in Synthesize, their proof of knowledge in Finalize) on
	// the backend's devices (CommitmentMSMer); nil: on the host.
	Commitments CommitmentMSMer
}

// PreparedConsumer is a Backend whose Compute may leave a partition's
// Prepared unusable for another Compute.
type PreparedConsumer interface {
	ConsumesPrepared() bool
}

// StagedSizer is a Backend whose Stage copies only part of a partition's
// footprint, Compute copying the rest: StagedBytes is what Stage copies.
type StagedSizer interface {
	StagedBytes(k *Keys) int64
}

// BG2Computer is a Backend whose Compute can also run the G2 MSM of b_g2,
// filling Computed.B2; ComputesBG2 says whether it does with its settings.
type BG2Computer interface {
	ComputesBG2() bool
}

// Footprinter is a Backend that knows the device buffer one partition needs
// (its own layout, aligned, without what it keeps per device).
type Footprinter interface {
	Footprint(k *Keys) int64
}

// CommitmentMSMer is a Backend that computes the MSMs of gnark's
// commitments against the Pedersen keys it placed with the key set. Its
// results are the host's (gnark-crypto's MultiExp) point for point; a
// failure is returned, never made good on the host.
type CommitmentMSMer interface {
	// CommitMSM is Σ scalars[j]·Basis[j] over commitment i's Pedersen basis
	// (k.PK.CommitmentKeys[i].Basis): the commitment to its private
	// committed values. It is called from the commitment hint, mid-solve.
	CommitMSM(k *Keys, i int, scalars []fr.Element) (curve.G1Affine, error)
	// KnowledgeMSM is Σ scalars[j]·σBasis[j] over every commitment's
	// BasisExpSigma concatenated in order: the folded proof of knowledge.
	KnowledgeMSM(k *Keys, scalars []fr.Element) (curve.G1Affine, error)
}

// KeyPlacer is a Backend that keeps proving keys on its devices (or streams
// them there) between partitions.
type KeyPlacer interface {
	// Preload places k on every device now, rather than in the first
	// partition's compute, so that the devices report the memory left for
	// partitions; a key set that cannot fit is an error.
	Preload(k *Keys) error
	// ReservePinned readies host memory for n partitions of k in flight.
	ReservePinned(k *Keys, n int) error
	// Devices are the device indices the backend uses.
	Devices() []int
	// Held is what the backend holds on device i.
	Held(i int) Held
	// EvictIdleOn frees the key sets no partition has used for idle on
	// device i and returns the bytes freed.
	EvictIdleOn(i int, idle time.Duration) (int64, error)
	// Pinned is the pinned host memory kept for staging.
	Pinned() int64
	// DevicePlan is how one partition of k uses device i.
	DevicePlan(i int, k *Keys) (DevicePlan, error)
}

// Held is what a backend holds on one device for its key sets, by kind.
type Held struct {
	Keys    int64 // key points resident on the device
	Host    int64 // key points kept on the host and streamed
	Disk    int64 // key points streamed from disk (in no memory)
	Staging int64 // host buffers points streamed from disk are read into
	Chunks  int64 // device buffers streamed points pass through
	Scratch int64 // room for the largest MSM's scratch
	Tables  int64 // NTT tables
	// MSMTables are the precomputed MSM tables of resident key points
	// (copies of the points times powers of two), beyond the points
	// themselves, which Keys counts.
	MSMTables int64
	// Commitments are the Pedersen bases of gnark's commitments, resident
	// on the device (their MSM's buffer is in Scratch).
	Commitments int64
}

// DevicePlan is how one partition of a key set uses a device: printable (one
// line per item), whether one partition fits beside what the backend holds,
// and where the key's points live.
type DevicePlan interface {
	fmt.Stringer
	Fits() bool
	KeyTier() string
}

// CapabilitiesOf returns what b can do beyond Stage and Compute.
func CapabilitiesOf(b Backend) Capabilities {
	var c Capabilities
	c.Prep, _ = b.(PrepAllocator)
	if g, ok := b.(BG2Computer); ok {
		c.ComputesBG2 = g.ComputesBG2()
	}
	if f, ok := b.(Footprinter); ok {
		c.Footprint = f.Footprint
	}
	if f, ok := b.(StagedSizer); ok {
		c.Staged = f.StagedBytes
	}
	c.Keys, _ = b.(KeyPlacer)
	if pc, ok := b.(PreparedConsumer); ok {
		c.ConsumesPrepared = pc.ConsumesPrepared()
	}
	c.Commitments, _ = b.(CommitmentMSMer)
	return c
}

// DeviceFootprint is the device memory one partition of k holds during stage
// and compute when its backend says nothing else: a, b, c on the FFT domain
// and the three wire vectors. The key's points are resident and counted once
// per device, not here.
func DeviceFootprint(k *Keys) int64 {
	const elem = 32
	n := int64(k.PK.Domain.Cardinality)
	wires := int64(len(k.PK.InfinityA))
	return elem * (3*n + 3*wires)
}
