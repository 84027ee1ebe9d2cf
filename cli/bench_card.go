package cli

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cardWatch samples what nvidia-smi reports of each card while a bench row
// runs: the SM clock, the temperature, the power drawn and the reasons the
// driver gives for holding the clocks down. The same row on the same card
// kind has run 3-15 % apart from machine to machine and minute to minute
// (docs/runs/h100-2026-12-06i, c3); these say whether the card itself was
// held back. nvidia-smi numbers the cards its own way (PCI order), which
// CUDA_VISIBLE_DEVICES may not follow, so every card it lists is sampled.
type cardWatch struct {
	cmd     *exec.Cmd
	samples chan []cardSample
	maxSM   map[int]float64
}

type cardSample struct {
	index   int
	sm      float64 // MHz
	temp    float64 // °C
	power   float64 // W; NaN where the card does not report it
	reasons uint64  // the clock event reasons' bit mask; 0 where none were queried
	hasWhy  bool
}

// The bits of nvidia-smi's clocks_event_reasons.active (NVML's
// nvmlClocksEventReason*), in its own words.
var clockReasons = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"}, {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"}, {0x10, "sync_boost"}, {0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"}, {0x100, "display_clock_setting"},
}

// The field lists tried in turn: the reasons' name changed in newer drivers
// (clocks_throttle_reasons before), and a driver that knows neither still
// gives the rest.
var cardQueries = []string{
	"index,clocks.sm,temperature.gpu,power.draw,clocks_event_reasons.active",
	"index,clocks.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active",
	"index,clocks.sm,temperature.gpu,power.draw",
}

// cardProbe is what nvidia-smi answered once, before any sampling: where it
// is, the first of cardQueries it takes, each card's highest SM clock.
type cardProbe struct {
	smi   string
	query string
	maxSM map[int]float64
}

// probeCards asks nvidia-smi once which fields it gives, or returns nil
// where it is not on the PATH or answers none of the queries (then no card
// line is printed). Each answer is bounded: a driver that hangs must not
// hold the bench.
func probeCards(ctx context.Context) *cardProbe {
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil
	}
	once := func(fields string) ([]byte, error) {
		probe, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return exec.CommandContext(probe, smi, "--query-gpu="+fields, "--format=csv,noheader,nounits").Output()
	}
	p := &cardProbe{smi: smi, maxSM: map[int]float64{}}
	for _, q := range cardQueries {
		if out, err := once(q); err == nil && len(parseCardSamples(string(out), q)) > 0 {
			p.query = q
			break
		}
	}
	if p.query == "" {
		return nil
	}
	if out, err := once("index,clocks.max.sm"); err == nil {
		for _, f := range smiRows(string(out), 2) {
			i, err1 := strconv.Atoi(f[0])
			mhz, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil {
				p.maxSM[i] = mhz
			}
		}
	}
	return p
}

// watch starts sampling every interval; nil (no sampling) on a nil probe or
// where nvidia-smi does not start.
func (p *cardProbe) watch(every time.Duration) *cardWatch {
	if p == nil || every <= 0 {
		return nil
	}
	w := &cardWatch{samples: make(chan []cardSample, 1), maxSM: p.maxSM}
	w.cmd = exec.Command(p.smi, "--query-gpu="+p.query, "--format=csv,noheader,nounits", "-lms", strconv.FormatInt(max(every.Milliseconds(), 1), 10))
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil
	}
	if err := w.cmd.Start(); err != nil {
		return nil
	}
	go func() {
		var got []cardSample
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			got = append(got, parseCardSamples(sc.Text(), p.query)...)
		}
		w.samples <- got
	}()
	return w
}

// parseCardSamples reads nvidia-smi's csv lines of one of cardQueries;
// a line it cannot read is left out.
func parseCardSamples(text, query string) []cardSample {
	nf := len(strings.Split(query, ","))
	var out []cardSample
	for _, f := range smiRows(text, nf) {
		var s cardSample
		var err error
		if s.index, err = strconv.Atoi(f[0]); err != nil {
			continue
		}
		if s.sm, err = strconv.ParseFloat(f[1], 64); err != nil {
			continue
		}
		if s.temp, err = strconv.ParseFloat(f[2], 64); err != nil {
			continue
		}
		if s.power, err = strconv.ParseFloat(f[3], 64); err != nil {
			s.power = math.NaN() // "[N/A]" on some boards
		}
		if nf == 5 {
			r, err := strconv.ParseUint(strings.TrimPrefix(f[4], "0x"), 16, 64)
			if err != nil {
				continue
			}
			s.reasons, s.hasWhy = r, true
		}
		out = append(out, s)
	}
	return out
}

// smiRows splits nvidia-smi's csv output (--format=csv,noheader,nounits)
// into its lines' trimmed fields, leaving out a line without n of them.
func smiRows(text string, n int) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Split(line, ",")
		if len(f) != n {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		rows = append(rows, f)
	}
	return rows
}

// stop ends the sampling and sums it up, card by card.
func (w *cardWatch) stop() []cardUse {
	if w == nil {
		return nil
	}
	w.cmd.Process.Kill()
	got := <-w.samples
	w.cmd.Wait()
	return sumCards(got, w.maxSM)
}

// cardUse is one card's samples over a row.
type cardUse struct {
	index            int
	n                int
	smMin, smMedian  float64
	smMax, maxSM     float64 // the highest sampled, and the card's own highest (0: not known)
	tempMin, tempMax float64
	power            float64 // mean W; NaN where not reported
	hasWhy           bool
	why              map[string]int // reason → samples that gave it
}

func sumCards(samples []cardSample, maxSM map[int]float64) []cardUse {
	by := map[int][]cardSample{}
	for _, s := range samples {
		by[s.index] = append(by[s.index], s)
	}
	var out []cardUse
	for index, ss := range by {
		u := cardUse{index: index, n: len(ss), maxSM: maxSM[index], why: map[string]int{}, tempMin: math.Inf(1), tempMax: math.Inf(-1)}
		sm := make([]float64, 0, len(ss))
		power, np := 0.0, 0
		for _, s := range ss {
			sm = append(sm, s.sm)
			u.tempMin, u.tempMax = min(u.tempMin, s.temp), max(u.tempMax, s.temp)
			if !math.IsNaN(s.power) {
				power, np = power+s.power, np+1
			}
			if s.hasWhy {
				u.hasWhy = true
				for _, r := range clockReasons {
					if s.reasons&r.bit != 0 {
						u.why[r.name]++
					}
				}
			}
		}
		slices.Sort(sm)
		u.smMin, u.smMax, u.smMedian = sm[0], sm[len(sm)-1], sm[len(sm)/2]
		u.power = math.NaN()
		if np > 0 {
			u.power = power / float64(np)
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b cardUse) int { return a.index - b.index })
	return out
}

func (u cardUse) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "card %d: SM clock median %.0f MHz (%.0f-%.0f", u.index, u.smMedian, u.smMin, u.smMax)
	if u.maxSM > 0 {
		fmt.Fprintf(&b, ", the card's highest %.0f", u.maxSM)
	}
	fmt.Fprintf(&b, "), %.0f-%.0f °C", u.tempMin, u.tempMax)
	if !math.IsNaN(u.power) {
		fmt.Fprintf(&b, ", %.0f W mean", u.power)
	}
	fmt.Fprintf(&b, ", %d samples", u.n)
	if u.hasWhy {
		b.WriteString("; clocks held by: ")
		var held []string
		for _, r := range clockReasons {
			if n := u.why[r.name]; n > 0 {
				held = append(held, fmt.Sprintf("%s in %d", r.name, n))
			}
		}
		if len(held) == 0 {
			held = []string{"nothing"}
		}
		b.WriteString(strings.Join(held, ", "))
	}
	return b.String()
}
