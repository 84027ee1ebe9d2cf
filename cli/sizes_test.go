package cli

import "testing"

// Byte sizes that read as nothing a flag can mean are refused, not turned
// into a negative or zero size (a --vram-limit of 0 means the whole card).
func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"16GiB": 16 << 30, "512MiB": 512 << 20, "1073741824": 1 << 30, "1.5 GiB": 3 << 29, "2GB": 2e9, "7G": 7 << 30} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1GiB", "x", "NaN", "NaNGiB", "Inf", "+InfMiB", "1e30GiB", "0.1B", "GiB"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, accepted", in, got)
		}
	}
	for _, in := range []string{"NaN", "Inf", "-Inf", "1e30", "9e18K"} {
		if got, err := parseCount(in); err == nil {
			t.Errorf("parseCount(%q) = %d, accepted", in, got)
		}
	}
}

// FuzzSizes: whatever a user types, a size is positive or an error, and
// flagBytes writes a size parseBytes reads back as the same.
func FuzzSizes(f *testing.F) {
	for _, s := range []string{"16GiB", "512MiB", "1.5K", "2^20", "NaN", "1e30GiB", "0.1B", " 3 MB "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseCount(s); err == nil && (n <= 0 || n > 1<<40) {
			t.Errorf("parseCount(%q) = %d", s, n)
		}
		n, err := parseBytes(s)
		if err != nil {
			return
		}
		if n <= 0 {
			t.Fatalf("parseBytes(%q) = %d", s, n)
		}
		if back, err := parseBytes(flagBytes(n)); err != nil || back != n {
			t.Errorf("parseBytes(flagBytes(%d) = %q) = %d, %v", n, flagBytes(n), back, err)
		}
	})
}
