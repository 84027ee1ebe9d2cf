package gpuprove

import (
	"errors"
	"fmt"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

// Options says which GPUs to open and how.
type Options struct {
	// Library is the path of the kernel library; empty follows cuda.Load's
	// search order ($CUZK_GPU_LIB, next to the executable, build/).
	Library string
	// Devices are CUDA device indices; empty means device 0.
	Devices []int
	// VRAMLimit makes each device behave like a card of this many bytes
	// (see DeviceOptions); zero is the whole card.
	VRAMLimit int64
	// Pool is the stream-ordered pool's policy; zero is gpu.DefaultPoolPolicy.
	Pool gpu.PoolPolicy
	// BG2 runs b_g2 on the devices (see BackendOptions).
	BG2 bool
	// PinnedLimit bounds the pinned staging memory (see BackendOptions).
	PinnedLimit int64
	// NoSplit turns off the 0/1 split of the wire MSMs (see BackendOptions).
	NoSplit bool
	// SerialG2 runs b_g2's G2 MSM after the G1 MSMs (see BackendOptions).
	SerialG2 bool
	// KeyTier, KeysPinnedLimit, KeysHostLimit, PartitionsBeside and ChunkPoints place the
	// proving keys; Layout and NTTInPlace shape the partitions (see
	// BackendOptions).
	KeyTier          string
	KeysPinnedLimit  int64
	KeysHostLimit    int64
	PartitionsBeside int
	ChunkPoints      int
	Layout           string
	NTTInPlace       bool
	// MSMTables makes precomputed MSM tables of resident keys (see
	// BackendOptions).
	MSMTables string
	// CopiesInOrder copies a compact partition's vectors between the
	// kernels rather than beside them (see BackendOptions).
	CopiesInOrder bool
}

// GPUs is an opened backend and its devices.
type GPUs struct {
	Backend *Backend
	Devices []*Device
}

// Open loads the kernel library and opens the devices. A missing library,
// driver or GPU gives an error matching cuda.ErrUnavailable.
func Open(opt Options) (*GPUs, error) {
	lib, err := cuda.Load(opt.Library)
	if err != nil {
		return nil, err
	}
	indices := opt.Devices
	if len(indices) == 0 {
		indices = []int{0}
	}
	var cds []*cuda.Device
	for _, i := range indices {
		cd, err := lib.Device(i)
		if err != nil {
			return nil, fmt.Errorf("open GPU %d: %w", i, err)
		}
		cds = append(cds, cd)
	}
	b, err := NewBackend(cds, BackendOptions{BG2: opt.BG2, PinnedLimit: opt.PinnedLimit, NoSplit: opt.NoSplit, SerialG2: opt.SerialG2,
		KeyTier: opt.KeyTier, KeysPinnedLimit: opt.KeysPinnedLimit, KeysHostLimit: opt.KeysHostLimit, PartitionsBeside: opt.PartitionsBeside, ChunkPoints: opt.ChunkPoints,
		Layout: opt.Layout, NTTInPlace: opt.NTTInPlace, MSMTables: opt.MSMTables, CopiesInOrder: opt.CopiesInOrder})
	if err != nil {
		return nil, err
	}
	g := &GPUs{Backend: b}
	for _, cd := range cds {
		idx := cd.Index()
		d, err := NewDevice(cd, DeviceOptions{VRAMLimit: opt.VRAMLimit, Pool: opt.Pool,
			Reserved: func() int64 { return b.Reserved(idx) }, Backend: b})
		if err != nil {
			g.Close()
			return nil, err
		}
		g.Devices = append(g.Devices, d)
	}
	return g, nil
}

// PinKeys is Backend.PinKeys.
func (g *GPUs) PinKeys(k *prover.Keys) error { return g.Backend.PinKeys(k) }

// GPUDevices returns the devices as the lock designs take them.
func (g *GPUs) GPUDevices() []gpu.Device {
	out := make([]gpu.Device, len(g.Devices))
	for i, d := range g.Devices {
		out[i] = d
	}
	return out
}

// Close frees the resident keys, the devices' streams and ballast.
func (g *GPUs) Close() error {
	var errs []error
	for _, d := range g.Devices {
		errs = append(errs, d.Close())
	}
	errs = append(errs, g.Backend.Close())
	return errors.Join(errs...)
}
