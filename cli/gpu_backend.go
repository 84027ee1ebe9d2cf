package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
)

// openGPU opens the real GPU backend on the given devices: the kernel library
// from --gpu-lib (else cuda's search order), one gpu.Device per index. The
// VRAM limit applies only when --vram-limit was given: its default sizes the
// emulated devices of the CPU backend, not a real card. Errors from a missing
// library or GPU match cuda.ErrUnavailable. bg2 is --b-g2's choice: unless
// cpu, the devices run b_g2 too.
func openGPU(c *cli.Context, indices []int, vram int64, pool gpu.PoolPolicy, bg2 string) (prover.Backend, []gpu.Device, func(), error) {
	pinned, err := pinnedLimit(c)
	if err != nil {
		return nil, nil, nil, err
	}
	host, err := keysHostLimit(c)
	if err != nil {
		return nil, nil, nil, err
	}
	opt := gpuprove.Options{Library: c.String("gpu-lib"), Devices: indices, Pool: pool, BG2: bg2 != "cpu", SerialG2: bg2 == "gpu-serial",
		KeyTier: c.String("key-tier"), KeysPinnedLimit: pinned, KeysHostLimit: host, PartitionsBeside: min(c.Int("workers"), 2),
		MSMTables: c.String("msm-tables"), PinnedLimit: stagingPinnedLimit(c), CopiesInOrder: c.Bool("copies-in-order")}
	if c.IsSet("vram-limit") {
		opt.VRAMLimit = vram
	}
	g, err := gpuprove.Open(opt)
	if err != nil {
		return nil, nil, nil, err
	}
	closeFn := func() {
		if err := g.Close(); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "close GPU: %v\n", err)
		}
	}
	return g.Backend, g.GPUDevices(), closeFn, nil
}

// stagingPinnedLimit is the pinned host memory the GPU backend may keep for
// staging partitions: the host-memory gate's limit where it is above the
// backend's default (gpuprove.DefaultPinnedLimit), since every partition
// the gate admits holds its staging from its synthesis on, and one prepared
// in Go memory instead copies at a tenth of the speed; else the default (0).
func stagingPinnedLimit(c *cli.Context) int64 {
	limit, err := parseHostMemLimit(c.String("host-mem-limit"), memTotal)
	if err != nil || limit <= gpuprove.DefaultPinnedLimit {
		return 0
	}
	return limit
}

// pinnedLimit is --pinned-limit as the backend takes it: bytes, or -1 for
// off (gpuprove's zero would be its default).
func pinnedLimit(c *cli.Context) (int64, error) {
	s := c.String("pinned-limit")
	if s == "" || s == "off" || s == "0" {
		return -1, nil
	}
	v, err := parseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("--pinned-limit: %w", err)
	}
	if v <= 0 {
		return -1, nil
	}
	return v, nil
}

// keysHostLimit is --keys-host-limit as the backend takes it: bytes, 0 for
// none (off). auto is half of what the partitions' host-memory limit
// (--host-mem-limit, its default when off) leaves of MemTotal, the other
// half for the R1CS, the solver and the process: 32 GiB of a 128 GiB host
// by default. A host whose memory cannot be read has no limit under auto.
func keysHostLimit(c *cli.Context) (int64, error) {
	s := strings.TrimSpace(c.String("keys-host-limit"))
	if s != "" && !strings.EqualFold(s, "auto") {
		v, err := parseHostMemLimit(s, memTotal)
		if err != nil {
			return 0, fmt.Errorf("--keys-host-limit: %w", err)
		}
		return v, nil
	}
	mem, err := memTotal()
	if err != nil {
		return 0, nil
	}
	parts, err := parseHostMemLimit(c.String("host-mem-limit"), memTotal)
	if err != nil {
		return 0, fmt.Errorf("--host-mem-limit: %w", err)
	}
	if parts == 0 {
		parts = mem * defaultHostMemPercent / 100
	}
	return max((mem-parts)/2, 1), nil
}

// keyLoadOptions says, for a key directory, whether backend b needs the
// keys' points in memory: on a backend that places keys (the GPU's), not
// with --key-tier disk, nor under --key-tier auto when they are beyond
// --keys-host-limit (read from the proving key's header; keys not made yet
// are decided once they are). G2 B stays in memory when b_g2 runs on the
// CPU. Nil: all in memory.
func keyLoadOptions(c *cli.Context, b prover.Backend) func(dir string) (prover.LoadOptions, error) {
	caps := prover.CapabilitiesOf(b)
	tier := c.String("key-tier")
	if caps.Keys == nil || (tier != gpuprove.TierDisk && tier != "" && tier != "auto") {
		return nil
	}
	return func(dir string) (prover.LoadOptions, error) {
		opt := prover.LoadOptions{PointsOnDisk: true, G2InMemory: !caps.ComputesBG2}
		if tier == gpuprove.TierDisk {
			return opt, nil
		}
		limit, err := keysHostLimit(c)
		if err != nil || limit == 0 {
			return prover.LoadOptions{}, err
		}
		counts, err := prover.ReadPointCounts(dir)
		if errors.Is(err, prover.ErrNoKeys) {
			return prover.LoadOptions{}, nil
		}
		if err != nil {
			return prover.LoadOptions{}, err
		}
		if b := counts.Bytes(caps.ComputesBG2); b > limit {
			slog.Info("key points beyond the host budget for keys: loaded without them, streamed from disk",
				"dir", dir, "points", gpu.FormatBytes(b), "keys_host_limit", gpu.FormatBytes(limit))
			return opt, nil
		}
		return prover.LoadOptions{}, nil
	}
}

// preloadKeys puts the keys on the devices before the actors start, when the
// backend keeps them there, so that each device reports the memory left for
// partitions; and pins host memory for the partitions in flight (inFlight),
// so that the first ones do not wait for it; the solver's memory for the
// solves that run at once (solves) too, where prep copies out of it. That
// memory is faulted in: the partitions of the first job must not pay it.
func preloadKeys(b prover.Backend, k *prover.Keys, solves, inFlight int) error {
	caps := prover.CapabilitiesOf(b)
	if caps.Prep != nil {
		k.ReserveSolvesFor(b, solves)
	}
	if caps.Keys == nil {
		return nil
	}
	if err := caps.Keys.Preload(k); err != nil {
		return fmt.Errorf("load keys onto the GPU: %w", err)
	}
	if err := caps.Keys.ReservePinned(k, inFlight); err != nil {
		return fmt.Errorf("pin host memory for staging: %w", err)
	}
	return nil
}

// bg2Flag says where b_g2, the G2 MSM of the B wires, runs.
func bg2Flag() cli.Flag {
	return &cli.StringFlag{Name: "b-g2", Value: "auto",
		Usage: "where b_g2 (the G2 MSM) runs: cpu (beside the GPU work, as cuzk does), gpu (in the compute stage, on a second stream beside the G1 MSMs), gpu-serial (in the compute stage, after the G1 MSMs), or auto (gpu on the GPU backend)"}
}

// copiesInOrderFlag is --copies-in-order (gpuprove.BackendOptions.CopiesInOrder).
func copiesInOrderFlag() cli.Flag {
	return &cli.BoolFlag{Name: "copies-in-order",
		Usage: "gpu: with compact partitions (two vectors on the device), stage a and b and copy c and the wire vectors in order between the kernels, instead of b and the wires on a copy stream beside the kernels that do not read their place (also CUZK_COPIES_AHEAD=off)"}
}

// bg2Choice reads --b-g2: "auto", "cpu", "gpu" or "gpu-serial".
func bg2Choice(c *cli.Context) (string, error) {
	switch v := c.String("b-g2"); v {
	case "", "auto":
		return "auto", nil
	case "cpu", "gpu", "gpu-serial":
		return v, nil
	default:
		return "", fmt.Errorf("--b-g2 %q: want cpu, gpu, gpu-serial or auto", v)
	}
}

// bg2Where is where backend b runs b_g2.
func bg2Where(b prover.Backend) string {
	if prover.ComputesBG2(b) {
		return "gpu"
	}
	return "cpu"
}

// reportKeys records what b holds on its devices for key sets, and its
// pinned staging memory, in the metrics.
func reportKeys(b prover.Backend, m *metrics.Metrics) {
	h := prover.CapabilitiesOf(b).Keys
	if h == nil {
		return
	}
	for _, i := range h.Devices() {
		x := h.Held(i)
		m.SetHeld(i, metrics.Held{Keys: x.Keys, Streamed: x.Host, Disk: x.Disk, Staging: x.Staging, Chunks: x.Chunks,
			Scratch: x.Scratch, Tables: x.Tables, Commitments: x.Commitments, MSMTables: x.MSMTables})
	}
	m.SetPinnedHost(h.Pinned())
}

// printPlan prints how one partition of k uses each device, and fails when
// one does not fit.
func printPlan(w io.Writer, b prover.Backend, devices []gpu.Device, k *prover.Keys) error {
	need := runner.FootprintFor(b, k)
	fmt.Fprintf(w, "%s, %d constraints, domain %d: one partition's buffer %s\n", k.Circuit, k.Constraints(), k.PK.Domain.Cardinality,
		gpu.FormatBytes(need))
	planner := prover.CapabilitiesOf(b).Keys
	var errs []error
	for _, d := range devices {
		info := d.Info()
		if planner == nil {
			fmt.Fprintf(w, "device %d (%s): %s for partitions\n", info.Index, info.Name, gpu.FormatBytes(info.Total))
			if need > info.Total {
				errs = append(errs, fmt.Errorf("device %d: one partition needs %s, %s available", info.Index, gpu.FormatBytes(need), gpu.FormatBytes(info.Total)))
			}
			continue
		}
		p, err := planner.DevicePlan(info.Index, k)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "device %d (%s): %s", info.Index, info.Name, p)
		if !p.Fits() {
			errs = append(errs, fmt.Errorf("device %d: %w (the plan above)", info.Index, gpuprove.ErrDoesNotFit))
		}
	}
	return errors.Join(errs...)
}

// evictIdleKeys frees, every so often until stop, the keys no partition has
// used for idle, and keeps the metrics current. Freeing waits for the whole
// device (cudaFree), so it happens only for keys idle that long.
func evictIdleKeys(b prover.Backend, m *metrics.Metrics, idle time.Duration, log func(device int, freed int64, err error)) (stop func()) {
	h := prover.CapabilitiesOf(b).Keys
	if h == nil || idle <= 0 {
		return func() {}
	}
	return every(idleCheck(idle), func() {
		for _, i := range h.Devices() {
			freed, err := h.EvictIdleOn(i, idle)
			m.KeysEvicted(i, freed)
			if freed > 0 || err != nil {
				log(i, freed, err)
			}
		}
		reportKeys(b, m)
	})
}

// idleCheck is how often to look for what has been idle for idle.
func idleCheck(idle time.Duration) time.Duration {
	return min(max(idle/4, 10*time.Millisecond), 30*time.Second)
}

// every runs f every period until stop, which waits for a run in progress.
func every(period time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			f()
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
