package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
)

// defaultHostMemPercent is the share of the host's memory (MemTotal in
// /proc/meminfo) that partitions may hold when --host-mem-limit is not given.
// The rest is for the keys (a porep-sha 2^22 key set holds a few GiB on the
// host), the solver's compiled program and the process itself.
const defaultHostMemPercent = 50

// hostMemFlags are the flags of the host-memory gate, shared by prove,
// resume, the daemon and bench prove.
func hostMemFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "host-mem-limit", Value: "auto",
			Usage: fmt.Sprintf("host memory partitions may hold from their synthesis until they leave the host: bytes (64GiB), a share of the host's memory (60%%), auto (%d%% of MemTotal in /proc/meminfo) or off (each GPU worker synthesizes its own partition, the older flow)", defaultHostMemPercent)},
		&cli.IntFlag{Name: "synth-workers", Usage: "partitions synthesized (and prepared) at once, ahead of the GPU workers, under --host-mem-limit (0: the GPU workers of all devices, or half the CPUs if more)",
			Action: intAtLeast("synth-workers", 0)},
	}
}

// hostSettings reads --host-mem-limit and --synth-workers into cfg for a run
// on devices devices.
func hostSettings(c *cli.Context, cfg actors.Config, devices int) (actors.Config, error) {
	limit, err := parseHostMemLimit(c.String("host-mem-limit"), memTotal)
	if err != nil {
		return cfg, fmt.Errorf("--host-mem-limit: %w", err)
	}
	cfg.HostMemLimit = limit
	cfg.SynthWorkers = c.Int("synth-workers")
	if cfg.SynthWorkers < 0 {
		return cfg, fmt.Errorf("--synth-workers %d: must be at least 0", cfg.SynthWorkers)
	}
	if cfg.SynthWorkers == 0 && limit > 0 {
		cfg.SynthWorkers = max(cfg.WorkersPerDevice*devices, runtime.NumCPU()/2)
	}
	return cfg, nil
}

// inFlight is how many partitions hold prepared data at once in a run with
// cfg on devices devices, as far as the key placement's reservations care:
// one per GPU worker, or one per synthesis slot when synthesis runs ahead.
func inFlight(cfg actors.Config, devices int) int {
	n := cfg.WorkersPerDevice * devices
	if cfg.HostMemLimit > 0 {
		n = max(n, cfg.SynthWorkers)
	}
	return n
}

// heldAtOnce is how many partitions a run with cfg on devices devices may
// hold on the host at once, of hostBytes each: the host-memory gate's room
// (at least one: a partition larger than the gate is admitted alone), or
// inFlight without the gate. Synthesis runs ahead of the GPU up to it, so a
// stream of jobs fills it; it is also the staging worth pinning beforehand.
func heldAtOnce(cfg actors.Config, devices int, hostBytes int64) int {
	if cfg.HostMemLimit > 0 && hostBytes > 0 {
		return max(1, int(min(cfg.HostMemLimit/hostBytes, 1<<20)))
	}
	return inFlight(cfg, devices)
}

// stagingToPin is how many partitions' pinned staging a run with cfg on
// devices devices readies before its first synthesis: with the host-memory
// gate, its room (heldAtOnce), at most most (the partitions the run has, or
// what it runs at once where they are not known); without the gate, one per
// partition in flight. The pool never gives pinned memory back, so pinning
// more than the gate admits only takes memory from the host.
func stagingToPin(cfg actors.Config, devices int, hostBytes int64, most int) int {
	if cfg.HostMemLimit > 0 {
		return min(heldAtOnce(cfg, devices, hostBytes), most)
	}
	return inFlight(cfg, devices)
}

// solvesAtOnce is how many solutions a run with cfg on devices devices holds
// at once, of partitions that hold hostBytes each under the host-memory gate
// (prover.HostFootprint), which is what the solver needs ready: one per GPU
// worker without the gate; under it, one per synthesis slot as far as the
// gate admits the partitions (each holds its solution from its synthesis
// until its prep has copied it). At least one.
func solvesAtOnce(cfg actors.Config, devices int, hostBytes int64) int {
	if cfg.HostMemLimit <= 0 {
		return max(1, cfg.WorkersPerDevice*devices)
	}
	n := cfg.SynthWorkers
	if hostBytes > 0 {
		n = min(n, int(cfg.HostMemLimit/hostBytes))
	}
	return max(1, n)
}

// parseHostMemLimit reads a host-memory limit: "off" (0: no gate), "auto" or
// "" (defaultHostMemPercent of the host's memory), a percentage of it
// ("60%"), or bytes ("64GiB"). total reads the host's memory.
func parseHostMemLimit(s string, total func() (int64, error)) (int64, error) {
	t := strings.TrimSpace(s)
	switch {
	case strings.EqualFold(t, "off"):
		return 0, nil
	case t == "" || strings.EqualFold(t, "auto"):
		t = strconv.Itoa(defaultHostMemPercent) + "%"
	}
	if pct, ok := strings.CutSuffix(t, "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || !(p > 0 && p <= 100) {
			return 0, fmt.Errorf("%q: want a share of the host's memory above 0%% and at most 100%%", s)
		}
		mem, err := total()
		if err != nil {
			return 0, fmt.Errorf("%q: %w (give the limit in bytes, e.g. 64GiB)", s, err)
		}
		return int64(float64(mem) * p / 100), nil
	}
	b, err := parseBytes(t)
	if err != nil {
		return 0, fmt.Errorf("%q: want bytes (64GiB), a percentage (60%%), auto or off", s)
	}
	return b, nil
}

// memTotal is the host's memory, MemTotal in /proc/meminfo.
func memTotal() (int64, error) { return readMeminfo("MemTotal") }

// memAvailable is MemAvailable in /proc/meminfo: what the host can still
// give without swapping.
func memAvailable() (int64, error) { return readMeminfo("MemAvailable") }

func readMeminfo(field string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read the host's memory: %w", err)
	}
	defer f.Close()
	return parseMeminfo(f, field)
}

// parseMemTotal reads MemTotal (in kB) from /proc/meminfo's format.
func parseMemTotal(r io.Reader) (int64, error) { return parseMeminfo(r, "MemTotal") }

// parseMeminfo reads field (in kB) from /proc/meminfo's format.
func parseMeminfo(r io.Reader, field string) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != field+":" {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || kb <= 0 || (len(fields) > 2 && fields[2] != "kB") {
			return 0, fmt.Errorf("/proc/meminfo: %s line %q is not a size in kB", field, sc.Text())
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("/proc/meminfo: %w", err)
	}
	return 0, fmt.Errorf("/proc/meminfo: no %s line", field)
}

// heapMargin is what capHeapToHost leaves the host beyond the Go heap's
// limit: the driver's and the kernel library's allocations after the cap,
// and the collector's lag behind a soft limit.
const heapMargin = 6 << 30

// capHeapToHost lowers the Go heap's soft limit (debug.SetMemoryLimit) to
// what the Go runtime holds now plus what the host still has available,
// less heapMargin, once memory outside the Go heap has been taken: keys
// moved into pinned memory and pinned staging (cudaHostAlloc) are invisible
// to the collector, which otherwise lets garbage grow the heap to twice
// what is live; at porep-sha's 2^27 that is 77 GiB of pinned memory beside
// 20 GiB of live heap on a 125 GiB host. A lower limit (GOMEMLIMIT's, or an
// earlier cap) is kept. It returns the limit set, or 0 when it changed
// nothing.
func capHeapToHost() int64 {
	avail, err := memAvailable()
	if err != nil {
		return 0
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	held := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	live := int64(s[2].Value.Uint64())
	// Never below half again what is live: a limit under the live heap
	// has the collector run without pause, on half the cores.
	limit := max(held+avail-heapMargin, live+live/2, 1<<30)
	if prev := debug.SetMemoryLimit(-1); prev <= limit {
		return 0
	}
	debug.SetMemoryLimit(limit)
	return limit
}
