package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseCount reads a count such as 16384, 64K, 1M or 2^20. Sizes are binary
// (1K = 1024), as constraint counts near powers of two are what users ask for.
func parseCount(s string) (int, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	if strings.HasPrefix(t, "2^") {
		e, err := strconv.Atoi(t[2:])
		if err != nil || e < 0 || e > 40 {
			return 0, fmt.Errorf("invalid size %q: want an exponent 0..40 after 2^", s)
		}
		return 1 << e, nil
	}
	mult := 1
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, t[:len(t)-1]
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid size %q: want a number such as 16384, 64K, 1M or 2^20", s)
	}
	v := f * float64(mult)
	if v >= 1<<40+1 {
		return 0, fmt.Errorf("invalid size %q: at most 2^40", s)
	}
	n := int(v)
	if n <= 0 {
		return 0, fmt.Errorf("invalid size %q: must be positive", s)
	}
	return n, nil
}

// parseBytes reads a byte size such as 16GiB, 512MiB or 1073741824.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"G", 1 << 30}, {"M", 1 << 20}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			mult, t = u.mult, strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid byte size %q: want e.g. 16GiB, 512MiB", s)
	}
	v := f * float64(mult)
	if v >= 1<<62 {
		return 0, fmt.Errorf("invalid byte size %q: at most 4 EiB", s)
	}
	if v < 1 {
		return 0, fmt.Errorf("invalid byte size %q: less than a byte", s)
	}
	return int64(v), nil
}

// flagBytes writes n as a size parseBytes reads back as n: in the largest
// binary unit that divides it.
func flagBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprint(n)
}

// intsIn reads a comma-separated list of integers, each in [lo, hi]; a
// blank list is none. On an entry that is not such an integer it returns
// that entry as given and false.
func intsIn(s string, lo, hi int) ([]int, string, bool) {
	if strings.TrimSpace(s) == "" {
		return nil, "", true
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < lo || v > hi {
			return nil, f, false
		}
		out = append(out, v)
	}
	return out, "", true
}

// parseIndexList reads "0,1,3" into device indices.
func parseIndexList(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid device index %q in %q", part, s)
		}
		if seen[n] {
			return nil, fmt.Errorf("device %d listed twice in %q", n, s)
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no devices in %q", s)
	}
	return out, nil
}
