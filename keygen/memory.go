package keygen

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// HostMemory is the process's resident memory now and at its peak so far,
// in bytes, as Linux counts them (VmRSS, VmHWM), and the Go heap's
// reachable and obtained bytes. Setup logs it at each stage: the figure that
// decides whether a setup fits a host. Zero where /proc is not there.
type HostMemory struct {
	RSS, Peak          uint64
	HeapAlloc, HeapSys uint64
}

// ReadHostMemory reads the process's HostMemory.
func ReadHostMemory() HostMemory {
	var m HostMemory
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.HeapAlloc, m.HeapSys = ms.HeapAlloc, ms.HeapSys
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Bytes()
		for _, k := range []struct {
			name string
			to   *uint64
		}{{"VmRSS:", &m.RSS}, {"VmHWM:", &m.Peak}} {
			if rest, ok := bytes.CutPrefix(line, []byte(k.name)); ok {
				kb, _ := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
				*k.to = kb << 10
			}
		}
	}
	return m
}

// Attrs are m's figures in MiB, for a log line.
func (m HostMemory) Attrs() []any {
	return []any{"rss_mib", m.RSS >> 20, "peak_mib", m.Peak >> 20, "heap_mib", m.HeapAlloc >> 20, "heap_sys_mib", m.HeapSys >> 20}
}

// HostRAM is the host's physical memory in bytes (MemTotal), zero where
// /proc is not there.
func HostRAM() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("MemTotal:")); ok {
			kb, _ := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
			return kb << 10
		}
	}
	return 0
}
