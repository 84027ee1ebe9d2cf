package facts

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

const expected = `s2 malloc: called 20ms, returned 20.3ms (after 300µs)
s2 device_sync: called 20ms, returned 200ms (after 180ms), waited for another stream
s2 mem_info: called 20ms, returned 20.1ms (after 100µs), free 131.28 GiB
s2 malloc_async: called 220ms, returned 220ms (after 0s), error: device 0: allocate 12.00 GiB with 4.00 GiB free: out of device memory
`

// TestCompareCatchesEachDifference: a device that differs from the measured
// behaviour in any one respect the runners judge is caught.
func TestCompareCatchesEachDifference(t *testing.T) {
	exp, err := ParseLines(expected)
	if err != nil {
		t.Fatal(err)
	}
	if got := Format(exp); got != expected {
		t.Fatalf("parse and format do not round-trip:\n%s", got)
	}
	tol := Tolerance{Slack: 30 * time.Millisecond, Frac: 0.15, FreeGiB: 0.01}
	if d := Compare(exp, exp, tol); len(d) != 0 {
		t.Fatalf("the expected lines differ from themselves: %v", d)
	}
	cases := map[string]func(l []Line){
		"did not wait":     func(l []Line) { l[1].Waited, l[1].Returned = false, l[1].Called },
		"waited":           func(l []Line) { l[0].Returned += 150 * time.Millisecond },
		"free":             func(l []Line) { l[2].Free = 139.28 },
		"no OOM":           func(l []Line) { l[3].Err = "" },
		"other error":      func(l []Line) { l[3].Err = "device 0: malloc_async: needs a stream" },
		"missing":          func(l []Line) { l[0].Op = "free" },
		"waited not known": func(l []Line) { l[1].Waited = false },
	}
	for name, change := range cases {
		got := append([]Line(nil), exp...)
		change(got)
		if d := Compare(exp, got, tol); len(d) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
	// A threshold compares which side of it a call returned on, not costs.
	slow := append([]Line(nil), exp...)
	slow[0].Returned += 90 * time.Millisecond
	if d := Compare(exp, slow, Tolerance{Waits: 150 * time.Millisecond, FreeGiB: 0.01}); len(d) != 0 {
		t.Errorf("a slower call that did not wait was judged as waiting: %v", d)
	}
	slow[0].Returned += 100 * time.Millisecond
	if d := Compare(exp, slow, Tolerance{Waits: 150 * time.Millisecond, FreeGiB: 0.01}); len(d) == 0 {
		t.Errorf("a call that waited 190 ms went unnoticed")
	}
}

func TestParseRefusesBadScripts(t *testing.T) {
	for _, in := range []string{
		"at 0s s1 bogus", "at 0s s0 device_sync", "at x s1 device_sync", "at 10ms s1 device_sync\nat 5ms s1 mem_info",
		"at 0s s1 malloc 1", "in 0s s1 mem_info",
	} {
		td := &datadriven.TestData{Cmd: "probe", Input: in, Pos: "test"}
		if _, err := Parse(td); err == nil {
			t.Errorf("Parse accepted %q", in)
		}
	}
	td := &datadriven.TestData{Cmd: "probe", Input: "at 0s s1 mem_info", Pos: "test",
		CmdArgs: []datadriven.CmdArg{{Key: "vram", Vals: []string{"-1"}}}}
	if _, err := Parse(td); err == nil || !strings.Contains(err.Error(), "vram") {
		t.Errorf("Parse accepted a negative vram: %v", err)
	}
}
