package cli

import (
	"flag"
	"testing"

	"github.com/urfave/cli/v2"
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
