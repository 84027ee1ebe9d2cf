package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpuprove"
)

// copyLoadModes reads bench prove's --copy-load: for each row, whether it
// runs alone, beside the copy load, or both (alone first).
func copyLoadModes(s string) ([]bool, error) {
	switch s {
	case "off":
		return []bool{false}, nil
	case "on":
		return []bool{true}, nil
	case "also":
		return []bool{false, true}, nil
	}
	return nil, fmt.Errorf("--copy-load %q: want off, on or also", s)
}

// copyLoad is bench prove's --copy-load: on every device, a stream of its
// own copying a pinned buffer to the device one copy after another for a row's
// whole run (bench interference's copy load), so that every kernel of a
// one-worker row runs beside host→device copies. Against the same row
// alone, that is what another partition's staging costs a kernel that
// streams its keys through the copy engine (sim calibrate --copies-trace:
// device.stream_stall), which a one-worker row never shows.
type copyLoad struct {
	bytes   int64
	benches []*ifBench // one per device: what the load allocated there
	loads   []ifLoad
}

// newCopyLoad makes the load on every device: bytes of pinned host memory
// and as many on the device, outside the designs' accounting.
func newCopyLoad(devs []*gpuprove.Device, bytes int64) (*copyLoad, error) {
	l := &copyLoad{bytes: bytes}
	for _, d := range devs {
		b, ld, err := newCopyLoop(d.CUDA(), bytes)
		l.benches = append(l.benches, b)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("--copy-load on device %d: %w", d.Info().Index, err), l.close())
		}
		l.loads = append(l.loads, ld)
	}
	return l, nil
}

// newCopyLoop is bench interference's copy load of bytes on d, one copy at
// a time, each waited for before the next is queued, so that the stream
// is empty for a moment between copies: a device-wide wait of the
// prover's (cudaFree, cudaFreeHost) that waits for the device to go idle
// would never return beside a stream always one copy ahead. What it
// allocated is b's, for b.close.
func newCopyLoop(d *cuda.Device, bytes int64) (b *ifBench, ld ifLoad, err error) {
	b = &ifBench{d: d, spec: interferenceSpec{copyBytes: bytes}}
	if ld, err = b.newLoad("copy"); err != nil {
		return b, nil, err
	}
	ld.(*deviceLoop).ahead = 0
	return b, ld, nil
}

// what says what the load is, for the bench's log.
func (l *copyLoad) what() string {
	return fmt.Sprintf("copy load: %s pinned → device on each of %d devices, on a stream of its own, again and again for each --copy-load row (its device buffer outside the plan)",
		gpu.FormatBytes(l.bytes), len(l.loads))
}

// run starts the load on every device and returns once each copies at its
// pace; stop ends it and gives each device's GB/s over the row.
func (l *copyLoad) run(ctx context.Context) (stop func() ([]float64, error), err error) {
	end, err := startLoads(ctx, l.loads)
	if err != nil {
		return nil, fmt.Errorf("copy load: %w", err)
	}
	w0 := time.Now()
	return func() ([]float64, error) {
		w1 := time.Now()
		err := end()
		if err != nil {
			err = fmt.Errorf("copy load: %w", err)
		}
		var gbps []float64
		for _, ld := range l.loads {
			gbps = append(gbps, ld.achieved(w0, w1)/1e9)
		}
		return gbps, err
	}, nil
}

// close frees what the load allocated; it must not be running.
func (l *copyLoad) close() error {
	var errs []error
	for _, b := range l.benches {
		errs = append(errs, b.close())
	}
	l.benches, l.loads = nil, nil
	return errors.Join(errs...)
}

// copiesNote is a row's words for the load beside it: "" alone.
func copiesNote(r gpuBenchRow) string {
	if !r.copies {
		return ""
	}
	var s []string
	for _, v := range r.copyGBps {
		s = append(s, fmt.Sprintf("%.1f", v))
	}
	return fmt.Sprintf(" beside copies (%s GB/s)", strings.Join(s, ", "))
}
