package sim

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cuzk/cuzk/actors"
)

var stageColors = map[actors.Stage]string{
	actors.StageSynthesize: "#8ecae6",
	actors.StagePrep:       "#219ebc",
	actors.StageStage:      "#ffb703",
	actors.StageCompute:    "#fb8500",
	actors.StageBG2:        "#9b5de5",
	actors.StageFinalize:   "#06d6a0",
}

var workerColors = []string{"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"}

// lane is one row of the timeline.
type lane struct {
	label string
	bars  []bar
	rows  int // sub-rows for overlapping bars (engine lanes)
}

type bar struct {
	start, end time.Duration
	color      string
	text       string
	title      string
	row        int
	failed     bool
}

// WriteTimeline draws the run as SVG: per device, one lane per lock (who held
// it), one for each GPU engine (kernels and copies; overlapping kernels share
// the engine and are drawn in sub-rows), and one per worker (its stages), with
// OOMs, fallbacks, retries and process crashes marked. It needs a run made
// with Options.Record.
func (r *Result) WriteTimeline(w io.Writer) error {
	return r.WriteTimelineWindow(w, 0, 0)
}

// WriteTimelineWindow is WriteTimeline restricted to [from, to) of virtual
// time; to = 0 means the end of the run.
func (r *Result) WriteTimelineWindow(w io.Writer, from, to time.Duration) error {
	c := r.rec
	if c == nil || !c.record {
		return fmt.Errorf("timeline: the run was not recorded (set Options.Record)")
	}
	end := time.Duration(r.Report.SimulatedS * float64(time.Second))
	if end == 0 {
		// The run took no virtual time (every partition refused at once):
		// what happened is drawn at the start of a millisecond's window.
		end = time.Millisecond
	}
	if to <= 0 || to > end {
		to = end
	}
	if to <= from {
		return fmt.Errorf("timeline: empty window [%v, %v)", from, to)
	}
	workers := r.res.cfg.WorkersPerDevice
	var lanes []*lane
	var laneDevice []int
	for d := 0; d < r.res.devices; d++ {
		add := func(l *lane) {
			lanes = append(lanes, l)
			laneDevice = append(laneDevice, d)
		}
		// Locks, in the order they were first granted.
		var names []string
		for _, l := range c.leases {
			if l.device == d && !slices.Contains(names, l.lock) {
				names = append(names, l.lock)
			}
		}
		for _, name := range names {
			l := &lane{label: fmt.Sprintf("gpu%d lock %s", d, name), rows: 1}
			for _, s := range c.leases {
				if s.device == d && s.lock == name {
					l.bars = append(l.bars, bar{start: s.start, end: s.end, color: workerColors[s.worker%len(workerColors)],
						text: fmt.Sprintf("w%d", s.worker), title: fmt.Sprintf("%s held by worker %d for %s", name, s.worker, s.partition)})
				}
			}
			add(l)
		}
		for _, engine := range []string{"compute", "copy"} {
			l := &lane{label: fmt.Sprintf("gpu%d %s engine", d, engine)}
			var acts []DeviceActivity
			for _, a := range c.engines {
				if a.Device == d && a.Engine == engine {
					acts = append(acts, a)
				}
			}
			color := stageColors[actors.StageCompute]
			if engine == "copy" {
				color = stageColors[actors.StageStage]
			}
			var rowEnd []time.Duration
			for _, a := range acts {
				row := -1
				for i, e := range rowEnd {
					if e <= a.Start {
						row = i
						break
					}
				}
				if row < 0 {
					row = len(rowEnd)
					rowEnd = append(rowEnd, 0)
				}
				rowEnd[row] = a.End
				text := a.Label
				if engine == "compute" {
					text = shortPartition(a.Label)
				}
				l.bars = append(l.bars, bar{start: a.Start, end: a.End, color: color, row: row, text: text,
					title: fmt.Sprintf("%s on stream %d: %s", engine, a.Stream, a.Label)})
			}
			l.rows = max(1, len(rowEnd))
			add(l)
		}
		for wk := 0; wk < workers; wk++ {
			l := &lane{label: fmt.Sprintf("gpu%d worker %d", d, wk), rows: 1}
			for _, s := range c.stages {
				if s.device == d && s.worker == wk {
					l.bars = append(l.bars, bar{start: s.start, end: s.end, color: stageColors[s.stage], failed: s.err,
						text: shortPartition(s.partition.String()), title: fmt.Sprintf("%s %s", s.stage, s.partition)})
				}
			}
			add(l)
		}
	}

	const (
		left    = 170
		rowH    = 18
		laneGap = 6
		top     = 48
	)
	span := (to - from).Seconds()
	plotW := min(max(span*40, 1000), 3600)
	x := func(t time.Duration) float64 { return left + plotW*(t-from).Seconds()/span }
	y := top
	var body strings.Builder
	laneY := make([]int, len(lanes))
	lastDev := -1
	for i, l := range lanes {
		if laneDevice[i] != lastDev && lastDev >= 0 {
			y += 10
		}
		lastDev = laneDevice[i]
		laneY[i] = y
		h := l.rows*rowH + laneGap
		if i%2 == 0 {
			fmt.Fprintf(&body, `<rect x="0" y="%d" width="%.0f" height="%d" fill="#f4f4f4"/>`+"\n", y-laneGap/2, left+plotW+10, h)
		}
		fmt.Fprintf(&body, `<text x="6" y="%d" class="lbl">%s</text>`+"\n", y+rowH-5, html.EscapeString(l.label))
		for _, b := range l.bars {
			s, e := max(b.start, from), min(b.end, to)
			if b.end < 0 {
				e = to
			}
			if e <= from || s >= to {
				continue
			}
			x0, x1 := x(s), x(e)
			stroke := ""
			if b.failed {
				stroke = ` stroke="#d00000" stroke-width="2" stroke-dasharray="3,2"`
			}
			by := y + b.row*rowH
			fmt.Fprintf(&body, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>%s</title></rect>`+"\n",
				x0, by+1, max(x1-x0, 0.8), rowH-2, b.color, stroke, html.EscapeString(b.title))
			if x1-x0 > float64(7*len(b.text)+4) {
				fmt.Fprintf(&body, `<text x="%.1f" y="%d" class="bar">%s</text>`+"\n", x0+3, by+rowH-5, html.EscapeString(b.text))
			}
		}
		y += h
	}
	bottom := y
	// Marks on the lanes of the worker they concern.
	for _, m := range c.marks {
		if m.at < from || m.at > to {
			continue
		}
		mx := x(m.at)
		if m.device < 0 {
			fmt.Fprintf(&body, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d00000" stroke-width="2" stroke-dasharray="6,4"/>`+"\n", mx, top-6, mx, bottom)
			fmt.Fprintf(&body, `<text x="%.1f" y="%d" class="crash">%s</text>`+"\n", mx+4, top-8, html.EscapeString(m.text))
			continue
		}
		li := -1
		for i, l := range lanes {
			if laneDevice[i] == m.device && l.label == fmt.Sprintf("gpu%d worker %d", m.device, m.worker) {
				li = i
			}
		}
		if li < 0 {
			continue
		}
		my := laneY[li]
		switch m.text {
		case "OOM":
			fmt.Fprintf(&body, `<path d="M%.1f %d l-6 -9 h12 z" fill="#d00000"><title>OOM at %s</title></path>`+"\n", mx, my+rowH/2+4, fmtDur(m.at))
		case "fallback":
			fmt.Fprintf(&body, `<path d="M%.1f %d l5 5 l-5 5 l-5 -5 z" fill="#000" stroke="#fff"><title>fallback at %s</title></path>`+"\n", mx, my+rowH/2-5, fmtDur(m.at))
		default:
			fmt.Fprintf(&body, `<circle cx="%.1f" cy="%d" r="4" fill="#7b2cbf"><title>%s at %s</title></circle>`+"\n", mx, my+rowH/2, m.text, fmtDur(m.at))
		}
	}
	// Time axis.
	var axis strings.Builder
	step := niceStep(span)
	for t := 0.0; t <= span+1e-9; t += step {
		tx := left + plotW*t/span
		fmt.Fprintf(&axis, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/>`+"\n", tx, top-4, tx, bottom)
		fmt.Fprintf(&axis, `<text x="%.1f" y="%d" class="tick">%gs</text>`+"\n", tx-6, top-10, t+from.Seconds())
	}
	// Legend.
	var legend strings.Builder
	lx, ly := left, bottom+22
	for _, st := range []actors.Stage{actors.StageSynthesize, actors.StagePrep, actors.StageStage, actors.StageCompute, actors.StageBG2, actors.StageFinalize} {
		fmt.Fprintf(&legend, `<rect x="%d" y="%d" width="14" height="12" fill="%s"/><text x="%d" y="%d" class="lbl">%s</text>`+"\n", lx, ly-10, stageColors[st], lx+18, ly, st)
		lx += 110
	}
	fmt.Fprintf(&legend, `<path d="M%d %d l-6 -9 h12 z" fill="#d00000"/><text x="%d" y="%d" class="lbl">OOM</text>`+"\n", lx+6, ly+1, lx+16, ly)
	lx += 70
	fmt.Fprintf(&legend, `<path d="M%d %d l5 5 l-5 5 l-5 -5 z" fill="#000"/><text x="%d" y="%d" class="lbl">fallback</text>`+"\n", lx+5, ly-9, lx+16, ly)
	lx += 90
	fmt.Fprintf(&legend, `<circle cx="%d" cy="%d" r="4" fill="#7b2cbf"/><text x="%d" y="%d" class="lbl">retry / failed</text>`+"\n", lx+5, ly-4, lx+16, ly)
	lx += 130
	fmt.Fprintf(&legend, `<rect x="%d" y="%d" width="14" height="12" fill="#fff" stroke="#d00000" stroke-width="2" stroke-dasharray="3,2"/><text x="%d" y="%d" class="lbl">failed stage</text>`+"\n", lx, ly-10, lx+18, ly)
	fmt.Fprintf(&legend, `<text x="%d" y="%d" class="lbl">lock lanes: colour = worker holding it</text>`+"\n", left, ly+20)

	rep := r.Report
	title := fmt.Sprintf("%s — design %s, %d worker(s)/device, %.0f GiB, seed %d — %.3f partitions/s, %d OOM, %d fallbacks",
		rep.Scenario, rep.Design, rep.WorkersPerDevice, rep.VRAMGiB, rep.Seed, rep.Throughput, rep.OOMs, rep.Fallbacks)
	width := left + plotW + 20
	height := bottom + 60
	_, err := fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%d" viewBox="0 0 %.0f %d" font-family="DejaVu Sans, Arial, sans-serif">
<style>.lbl{font-size:12px;fill:#222}.bar{font-size:10px;fill:#111}.tick{font-size:11px;fill:#555}.title{font-size:15px;font-weight:bold;fill:#111}.crash{font-size:12px;fill:#d00000;font-weight:bold}</style>
<rect width="100%%" height="100%%" fill="#fff"/>
<text x="6" y="20" class="title">%s</text>
%s%s%s</svg>
`, width, height, width, height, html.EscapeString(title), axis.String(), body.String(), legend.String())
	return err
}

func shortPartition(s string) string {
	return s
}

func niceStep(span float64) float64 {
	for _, s := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600} {
		if span/s <= 25 {
			return s
		}
	}
	return 7200
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// sortSpans orders recorded spans so that output never depends on map order.
func (c *collector) sortSpans() {
	slices.SortStableFunc(c.stages, func(a, b stageSpan) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.device, b.device), cmp.Compare(a.worker, b.worker))
	})
	slices.SortStableFunc(c.leases, func(a, b leaseSpan) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.device, b.device), cmp.Compare(a.worker, b.worker), strings.Compare(a.lock, b.lock))
	})
}
