package cli

import (
	"flag"
	"fmt"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/prover"
)

// --pinned-limit: bytes, or off (pin no key points), as the backend takes it.
func TestPinnedLimitFlag(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want int64
		bad  bool
	}{
		{"64GiB", 64 << 30, false},
		{"512MiB", 512 << 20, false},
		{"off", -1, false},
		{"0", -1, false},
		{"lots", 0, true},
	} {
		fs := flag.NewFlagSet("prove", flag.ContinueOnError)
		fs.String("pinned-limit", "", "")
		if err := fs.Set("pinned-limit", c.arg); err != nil {
			t.Fatal(err)
		}
		got, err := pinnedLimit(cli.NewContext(cli.NewApp(), fs, nil))
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("--pinned-limit %s: %d, %v; want %d (error: %v)", c.arg, got, err, c.want, c.bad)
		}
	}
}

// --keys-host-limit: bytes, a share of the host's memory, off (no limit),
// or auto: half of what the partitions' limit leaves.
func TestKeysHostLimitFlag(t *testing.T) {
	mem, err := memTotal()
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	for _, c := range []struct {
		arg, hostMem string
		want         int64
		bad          bool
	}{
		{"32GiB", "auto", 32 << 30, false},
		{"off", "auto", 0, false},
		{"25%", "auto", mem / 4, false},
		{"auto", "auto", (mem - mem/2) / 2, false},
		{"auto", "off", (mem - mem/2) / 2, false},
		{"auto", "60%", (mem - int64(float64(mem)*0.6)) / 2, false},
		{"", "auto", (mem - mem/2) / 2, false},
		{"lots", "auto", 0, true},
	} {
		fs := flag.NewFlagSet("prove", flag.ContinueOnError)
		fs.String("keys-host-limit", "", "")
		fs.String("host-mem-limit", "", "")
		fs.Set("keys-host-limit", c.arg)
		fs.Set("host-mem-limit", c.hostMem)
		got, err := keysHostLimit(cli.NewContext(cli.NewApp(), fs, nil))
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("--keys-host-limit %q --host-mem-limit %s: %d, %v; want %d (error: %v)", c.arg, c.hostMem, got, err, c.want, c.bad)
		}
	}
}

// The GPU backend's keys are loaded without their points for --key-tier
// disk, or under auto when the points are beyond --keys-host-limit; G2 B
// stays when b_g2 runs on the CPU. Other tiers, and the CPU backend, load
// them all.
func TestKeysLoadedWithoutPointsWhenTheyDoNotFit(t *testing.T) {
	c, err := circuits.Lookup("mimc")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prover.Setup(c, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := k.Save(dir); err != nil {
		t.Fatal(err)
	}
	points := k.Counts().Bytes(false)
	gpuBackend := &gpuprove.Backend{} // b_g2 on the CPU
	for _, tc := range []struct {
		name       string
		b          prover.Backend
		tier       string
		limit      string
		dir        string
		onDisk     bool
		g2InMemory bool
	}{
		{"disk forced", gpuBackend, "disk", "off", dir, true, true},
		{"auto, beyond the limit", gpuBackend, "auto", fmt.Sprint(points - 1), dir, true, true},
		{"auto, within the limit", gpuBackend, "auto", fmt.Sprint(points), dir, false, false},
		{"auto, no limit", gpuBackend, "auto", "off", dir, false, false},
		{"auto, no keys yet", gpuBackend, "auto", "1KiB", t.TempDir(), false, false},
		{"pinned", gpuBackend, "pinned", "1KiB", dir, false, false},
		{"the CPU backend", prover.CPU{}, "disk", "1KiB", dir, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("prove", flag.ContinueOnError)
			fs.String("key-tier", tc.tier, "")
			fs.String("keys-host-limit", tc.limit, "")
			fs.String("host-mem-limit", "auto", "")
			var got prover.LoadOptions
			if opt := keyLoadOptions(cli.NewContext(cli.NewApp(), fs, nil), tc.b); opt != nil {
				if got, err = opt(tc.dir); err != nil {
					t.Fatal(err)
				}
			}
			if got.PointsOnDisk != tc.onDisk || got.G2InMemory != tc.g2InMemory {
				t.Fatalf("load options %+v; want points on disk %v, G2 in memory %v", got, tc.onDisk, tc.g2InMemory)
			}
		})
	}
}
