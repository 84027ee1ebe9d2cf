package service

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LoadEstimate is the host memory a key set whose files take fileBytes
// needs once loaded: the decoded constraint system and proving key (points
// decompressed: up to twice their size on disk) and the solver's reusable
// solutions.
func LoadEstimate(fileBytes int64) int64 { return 3 * fileBytes }

// SetupEstimate is the host memory a setup of target constraints per
// partition needs: the compiled system, the key's points (about 1 KiB per
// constraint over A, B in G1 and G2, K and H), the evaluations they are made
// from, and a fixed 64 MiB for the rest.
func SetupEstimate(target int) int64 { return int64(target)*3<<10 + 64<<20 }

// MemAvailable reads MemAvailable from /proc/meminfo: what the kernel
// estimates new allocations can take without swapping.
func MemAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("free host memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("free host memory: /proc/meminfo: %w", err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("free host memory: %w", err)
	}
	return 0, fmt.Errorf("free host memory: no MemAvailable in /proc/meminfo")
}
