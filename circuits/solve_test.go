package circuits_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/internal/par"
	"github.com/cuzk/cuzk/solve"
)

// cuzk's solver, which the prover runs in place of gnark's, gives gnark's
// wires on porep-sha (its Selects and its bit decompositions of field
// elements: the other circuits are compared in package solve).
func TestSolverMatchesGnarkOnPoRepSHA(t *testing.T) {
	c, _ := circuits.Lookup("porep-sha")
	l, err := c.Layout(1 << 13)
	if err != nil {
		t.Fatal(err)
	}
	ccs, err := circuits.Compile(c, l)
	if err != nil {
		t.Fatal(err)
	}
	p, err := solve.Compile(ccs.(*cs.R1CS))
	if err != nil {
		t.Fatal(err)
	}
	for part := range 2 {
		a, err := c.Assign(l, []byte("solver"), part)
		if err != nil {
			t.Fatal(err)
		}
		w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		want, err := ccs.Solve(w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Solve(w.Vector().(fr.Vector))
		if err != nil {
			t.Fatal(err)
		}
		ww := want.(*cs.R1CSSolution).W
		if len(got.W) != len(ww) {
			t.Fatalf("partition %d: %d wires, gnark %d", part, len(got.W), len(ww))
		}
		for i := range ww {
			if !got.W[i].Equal(&ww[i]) {
				t.Fatalf("partition %d: wire %d differs from gnark's", part, i)
			}
		}
	}
}

// BenchmarkSolve times cuzk's solver (the synthesize stage) on one partition
// of each circuit at 2^16 and reports ns per constraint and the share of
// wires that are 0 or 1:
//
//	go test -run - -bench Solve ./circuits/
func BenchmarkSolve(b *testing.B) {
	for _, name := range circuits.Names() {
		b.Run(fmt.Sprintf("%s/2^16", name), func(b *testing.B) {
			p, vec, res := solveSetup(b, name, 1<<16)
			bits := 0
			for i := range res.W {
				if res.W[i].IsZero() || res.W[i].IsOne() {
					bits++
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if err := p.SolveInto(vec, res); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(p.Constraints()), "ns/constraint")
			b.ReportMetric(100*float64(bits)/float64(len(res.W)), "%bits")
		})
	}
}

// BenchmarkSolvePoRepSHA times the solve of one porep-sha partition at the
// sizes of the PoRep-scale runs, in wall time and in the CPU time of the
// whole process per constraint (what a machine full of concurrent solves
// pays; other load on the machine does not count in it):
//
//	go test -run - -bench 'SolvePoRepSHA/2\^20' -benchtime 5x ./circuits/
//
// CUZK_SOLVE_LOGS=20,22,25 picks the sizes (default 20,22); 2^22 compiles
// in about 20 s on two cores (stamped), in about 4 GiB. It logs the compile's
// and the solver's layout times. CUZK_SOLVE_UNLINKED=1 also solves each
// layout without its links (2^k/unlinked), whose challenges are one chain
// each.
func BenchmarkSolvePoRepSHA(b *testing.B) {
	variants := []string{""}
	if os.Getenv("CUZK_SOLVE_UNLINKED") != "" {
		variants = append(variants, "/unlinked")
	}
	for _, lg := range solveLogs(b, 20, 22) {
		for _, v := range variants {
			b.Run(fmt.Sprintf("2^%d%s", lg, v), func(b *testing.B) { benchSolvePoRepSHA(b, lg, v != "") })
		}
	}
}

func benchSolvePoRepSHA(b *testing.B, lg int, unlinked bool) {
	p, vec, res := solveSetupLayout(b, "porep-sha", 1<<lg, func(l circuits.Layout) {
		if unlinked {
			delete(l, "links")
		}
	})
	runtime.GC() // the compile's garbage is not the solve's
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if err := p.SolveInto(vec, res); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0
	n := float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n/float64(p.Constraints()), "ns/constraint")
	b.ReportMetric(float64(cpu.Nanoseconds())/n/float64(p.Constraints()), "cpu-ns/constraint")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/partition")
}

// BenchmarkSolvesAhead runs eight porep-sha solves at once, as synthesis
// ahead of the GPU does on a 16-core host, each on a lane of the cores' pool
// (lanes) or on goroutines of its own (shared), and reports when the first
// and the last ended and the mean: the GPU waits for the first, the job for
// the last.
//
//	go test -run - -bench 'SolvesAhead/2\^20' -benchtime 5x ./circuits/
//
// CUZK_SOLVE_LOGS picks the sizes (default 20).
func BenchmarkSolvesAhead(b *testing.B) {
	const solves = 8
	for _, lg := range solveLogs(b, 20) {
		p, vec, res := solveSetup(b, "porep-sha", 1<<lg)
		p.Release(res)
		p.Reserve(solves)
		for _, lanes := range []bool{true, false} {
			name := "shared"
			if lanes {
				name = "lanes"
			}
			b.Run(fmt.Sprintf("2^%d/%s", lg, name), func(b *testing.B) {
				var first, last, mean time.Duration
				cpu0 := cpuTime()
				for b.Loop() {
					start := time.Now()
					ended := make([]time.Duration, solves)
					var wg sync.WaitGroup
					for i := range solves {
						var l *par.Lane
						if lanes {
							l = par.NewLane()
						}
						wg.Go(func() {
							r, err := p.SolveOn(l, vec, solve.Hints{})
							if err != nil {
								b.Error(err)
								return
							}
							ended[i] = time.Since(start)
							p.Release(r)
						})
					}
					wg.Wait()
					slices.Sort(ended)
					first, last = first+ended[0], last+ended[solves-1]
					for _, e := range ended {
						mean += e / solves
					}
				}
				n := time.Duration(b.N)
				b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N*solves), "cpu-s/solve")
				b.ReportMetric(float64((first/n).Microseconds())/1e3, "ms-first")
				b.ReportMetric(float64((mean/n).Microseconds())/1e3, "ms-mean")
				b.ReportMetric(float64((last/n).Microseconds())/1e3, "ms-last")
			})
		}
	}
}

// solveLogs is the sizes' logarithms in CUZK_SOLVE_LOGS (20,22), else def.
func solveLogs(b *testing.B, def ...int) []int {
	v := os.Getenv("CUZK_SOLVE_LOGS")
	if v == "" {
		return def
	}
	var logs []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			b.Fatalf("CUZK_SOLVE_LOGS=%q: %v", v, err)
		}
		logs = append(logs, n)
	}
	return logs
}

// cpuTime is the user and system time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// solveSetup compiles circuit name for target constraints, lays out its
// program and solves one assignment of it: the program, the witness and a
// result to solve into again.
func solveSetup(b *testing.B, name string, target int) (*solve.Program, fr.Vector, *solve.Result) {
	return solveSetupLayout(b, name, target, func(circuits.Layout) {})
}

// solveSetupLayout is solveSetup with the target's layout changed by edit.
func solveSetupLayout(b *testing.B, name string, target int, edit func(circuits.Layout)) (*solve.Program, fr.Vector, *solve.Result) {
	b.Helper()
	c, err := circuits.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	l, err := c.Layout(target)
	if err != nil {
		b.Fatal(err)
	}
	edit(l)
	t0 := time.Now()
	ccs, err := circuits.Compile(c, l)
	if err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	p, err := solve.Compile(ccs.(*cs.R1CS))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s %s: %d constraints, compiled in %v, laid out for solving in %v", name, l, p.Constraints(),
		t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	a, err := c.Assign(l, []byte("bench"), 0)
	if err != nil {
		b.Fatal(err)
	}
	w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		b.Fatal(err)
	}
	vec := w.Vector().(fr.Vector)
	res, err := p.Solve(vec)
	if err != nil {
		b.Fatal(err)
	}
	return p, vec, res
}
