package cli

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSMI puts an nvidia-smi on the PATH that knows the older name of the
// clock reasons only (as drivers before the rename do) and samples two
// cards, card 1 held by its power cap in every other sample.
func fakeSMI(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
case "$1" in
*clocks_event_reasons*) echo 'Field "clocks_event_reasons.active" is not a valid field to query.' >&2; exit 2 ;;
*clocks.max.sm*) echo "0, 1980"; echo "1, 1980"; exit 0 ;;
esac
i=0
while :; do
	echo "0, 1980, 41, 402.50, 0x0000000000000000"
	if [ $((i % 2)) = 0 ]; then echo "1, 1755, 47, [N/A], 0x0000000000000004"; else echo "1, 1980, 45, [N/A], 0x0000000000000000"; fi
	i=$((i + 1))
	[ "$3" = "-lms" ] || exit 0
	sleep 0.02
done
`
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestWatchCardsSamplesEachCard(t *testing.T) {
	fakeSMI(t)
	p := probeCards(context.Background())
	if p == nil || p.query != cardQueries[1] {
		t.Fatalf("probe %+v, want the older reasons' field", p)
	}
	if w := p.watch(0); w != nil {
		w.stop()
		t.Fatal("a watch at interval 0")
	}
	w := p.watch(20 * time.Millisecond)
	if w == nil {
		t.Fatal("no watch with nvidia-smi on the PATH")
	}
	time.Sleep(300 * time.Millisecond)
	cards := w.stop()
	if len(cards) != 2 {
		t.Fatalf("%d cards, want 2: %v", len(cards), cards)
	}
	c0, c1 := cards[0], cards[1]
	if c0.index != 0 || c1.index != 1 || c0.n < 3 || c1.n < 3 {
		t.Fatalf("cards %+v %+v", c0, c1)
	}
	if c0.smMin != 1980 || c0.smMax != 1980 || c0.maxSM != 1980 || c0.power != 402.5 || c0.tempMax != 41 {
		t.Errorf("card 0: %+v", c0)
	}
	if c1.smMin != 1755 || c1.smMax != 1980 || !math.IsNaN(c1.power) || c1.tempMin != 45 || c1.tempMax != 47 {
		t.Errorf("card 1: %+v", c1)
	}
	// Card 1 gave the power cap in every other sample, card 0 in none.
	if n := c1.why["sw_power_cap"]; n < c1.n/2-1 || n > c1.n/2+1 {
		t.Errorf("card 1: sw_power_cap in %d of %d samples", n, c1.n)
	}
	s0, s1 := c0.String(), c1.String()
	for _, want := range []string{"card 0: SM clock median 1980 MHz (1980-1980, the card's highest 1980)", "41-41 °C", "402 W mean", "clocks held by: nothing"} {
		if !strings.Contains(s0, want) {
			t.Errorf("%q lacks %q", s0, want)
		}
	}
	if !strings.Contains(s1, "sw_power_cap in ") || strings.Contains(s1, " W mean") {
		t.Errorf("card 1: %q", s1)
	}
}

func TestWatchCardsWithoutNvidiaSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p := probeCards(context.Background())
	if p != nil {
		t.Fatal("a probe without nvidia-smi")
	}
	w := p.watch(10 * time.Millisecond)
	if w != nil {
		t.Fatal("a watch without nvidia-smi")
	}
	if got := w.stop(); got != nil {
		t.Errorf("stop of no watch: %v", got)
	}
}

func TestWatchCardsRefusedQueries(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\necho 'No devices were found'\nexit 6\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if p := probeCards(context.Background()); p != nil {
		t.Fatalf("a probe where nvidia-smi answers no query: %+v", p)
	}
}

func TestParseCardSamples(t *testing.T) {
	q := cardQueries[0]
	got := parseCardSamples("0, 1980, 40, 399.1, 0x0000000000000020\n0, x, 40, 1, 0x0\n1, 1410, 80, [N/A], 0x0000000000000044\ngarbage\n", q)
	if len(got) != 2 {
		t.Fatalf("%d samples, want 2: %+v", len(got), got)
	}
	if got[0].sm != 1980 || got[0].reasons != 0x20 || !got[0].hasWhy || got[0].power != 399.1 {
		t.Errorf("first: %+v", got[0])
	}
	if got[1].index != 1 || !math.IsNaN(got[1].power) || got[1].reasons != 0x44 {
		t.Errorf("second: %+v", got[1])
	}
	u := sumCards(got, nil)
	if len(u) != 2 || u[0].why["sw_thermal_slowdown"] != 1 || u[1].why["sw_power_cap"] != 1 || u[1].why["hw_thermal_slowdown"] != 1 {
		t.Errorf("sums: %+v", u)
	}
	if s := u[1].String(); strings.Contains(s, "highest") || !strings.Contains(s, "sw_power_cap in 1, hw_thermal_slowdown in 1") {
		t.Errorf("card 1: %q", s)
	}
	// Without the reasons' field nothing is said of them.
	plain := parseCardSamples("0, 1500, 30, 100", cardQueries[2])
	if len(plain) != 1 || plain[0].hasWhy {
		t.Fatalf("plain: %+v", plain)
	}
	if s := sumCards(plain, nil)[0].String(); strings.Contains(s, "held") {
		t.Errorf("plain: %q", s)
	}
}
