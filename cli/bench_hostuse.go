package cli

import (
	"fmt"
	"runtime/metrics"
	"syscall"
	"time"
)

// hostUse is what the Go runtime and the kernel report of the process's host
// side, read before and after a bench row: the collector's cycles and CPU
// time, the process's CPU time and its minor page faults (memory touched for
// the first time, or again after the runtime returned it). A synthesis's
// time moves from process to process (docs/simulator.md, "Syntheses from
// process to process"); these say whether the collector or fresh memory is
// where it went (on the card: neither, runs/h100-2026-12-06f).
type hostUse struct {
	gcCycles    uint64
	gcCPU       float64 // seconds, the collector's (mark assists, workers, pauses)
	cpu         float64 // seconds, user and system
	minorFaults int64
}

func readHostUse() hostUse {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	u := hostUse{gcCycles: s[0].Value.Uint64(), gcCPU: s[1].Value.Float64()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.cpu = (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Seconds()
		u.minorFaults = int64(ru.Minflt)
	}
	return u
}

// since is what was used between b and u.
func (u hostUse) since(b hostUse) hostUse {
	return hostUse{gcCycles: u.gcCycles - b.gcCycles, gcCPU: u.gcCPU - b.gcCPU, cpu: u.cpu - b.cpu, minorFaults: u.minorFaults - b.minorFaults}
}

func (u hostUse) String() string {
	share := 0.0
	if u.cpu > 0 {
		share = 100 * u.gcCPU / u.cpu
	}
	return fmt.Sprintf("Go GC %d cycles, %.1f s CPU of the process's %.1f s (%.0f%%), %d minor page faults", u.gcCycles, u.gcCPU, u.cpu, share, u.minorFaults)
}
