package cuda

import (
	"errors"
	"fmt"
	"math/big"
	"testing"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// buildTable puts points on the device as the first row of a table of
// these window and copies, builds the rest there, and returns it.
func buildTable[P any](t *testing.T, d *Device, points []P, g2 bool, window, copies int) (MSMTable, func()) {
	t.Helper()
	tab, err := d.NewMSMTable(len(points), g2, window, copies, func(rows Ptr) error { return CopyIn(d, rows, points, DefaultStream) }, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	return tab, func() { d.Free(tab.Ptr) }
}

// rowStep is the doublings between a table's rows: its window times the
// windows a copy covers.
func rowStep(tab MSMTable) int {
	nw := 255/tab.Window + 1
	return tab.Window * ((nw + tab.Copies - 1) / tab.Copies)
}

// TestMSMTableRows: every row of a table is its power of two times the
// points, on both groups, with points at infinity kept at infinity.
func TestMSMTableRows(t *testing.T) {
	d := testDevice(t)
	const n = 300
	for _, g2 := range []bool{false, true} {
		for _, sh := range []struct{ window, copies int }{{0, 0}, {13, 3}, {8, 32}, {16, 2}} {
			t.Run(fmt.Sprintf("%s/window=%d,copies=%d", groupName(g2), sh.window, sh.copies), func(t *testing.T) {
				if g2 {
					p := randomPointsG2(n)
					p[5] = bls12381.G2Affine{}
					checkRows(t, d, p, true, g2PointSize, sh.window, sh.copies)
				} else {
					p := randomPoints(n)
					p[5] = bls12381.G1Affine{}
					checkRows(t, d, p, false, g1PointSize, sh.window, sh.copies)
				}
			})
		}
	}
}

// checkRows builds a table of points (size bytes each) and checks its
// shape and every row against gnark-crypto's multiples.
func checkRows[A any, PA interface {
	*A
	ScalarMultiplication(*A, *big.Int) *A
	Equal(*A) bool
}](t *testing.T, d *Device, p []A, g2 bool, size int64, window, copies int) {
	t.Helper()
	tab, free := buildTable(t, d, p, g2, window, copies)
	defer free()
	if copies > 0 && tab.Copies != copies {
		t.Fatalf("copies %d, asked for %d", tab.Copies, copies)
	}
	if window > 0 && tab.Window != window {
		t.Fatalf("window %d, asked for %d", tab.Window, window)
	}
	if copies == 0 && tab.Copies != 255/tab.Window+1 {
		t.Fatalf("copies %d at window %d, want one per window", tab.Copies, tab.Window)
	}
	n := len(p)
	got := make([]A, n)
	for k := 0; k < tab.Copies; k++ {
		if err := CopyOut(d, got, tab.Ptr.Add(int64(k*n)*size), DefaultStream); err != nil {
			t.Fatal(err)
		}
		e := new(big.Int).Lsh(big.NewInt(1), uint(k*rowStep(tab)))
		for i := range p {
			var w A
			PA(&w).ScalarMultiplication(&p[i], e)
			if !PA(&w).Equal(&got[i]) {
				t.Fatalf("row %d of %d, point %d: not 2^(%d·k) times the point", k, tab.Copies, i, rowStep(tab))
			}
		}
	}
}

const (
	g1PointSize = 96
	g2PointSize = 192
)

// TestMSMTable: MSMs over tables of several windows and copies against
// gnark-crypto, with and without the split, over every scalar mix, in both
// scalar forms, on both groups.
func TestMSMTable(t *testing.T) {
	d := testDevice(t)
	shapes := []struct{ window, copies int }{{0, 0}, {0, 2}, {0, 5}, {10, 0}, {13, 3}, {16, 7}, {8, 32}}
	sizes := []int{1, 2, 7, 1000, 4097}
	if !testing.Short() {
		sizes = append(sizes, 1<<14+5)
	}
	for _, g2 := range []bool{false, true} {
		for _, n := range sizes {
			points := groupPoints(g2, n)
			for _, mix := range splitMixes {
				switch mix.name {
				case "random", "90% 0/1", "small and top", "all one":
				default:
					continue
				}
				reduced := mixScalars(mix.mix, n, uint64(n))
				for _, sh := range shapes {
					name := fmt.Sprintf("%s/n=%d/%s/window=%d,copies=%d", groupName(g2), n, mix.name, sh.window, sh.copies)
					t.Run(name, func(t *testing.T) {
						checkTable(t, d, points, reduced, sh.window, sh.copies)
					})
				}
			}
		}
	}
}

// checkTable builds a table of points and checks its MSMs (split and not;
// Montgomery scalars, and canonical ones at and above r) against
// gnark-crypto.
func checkTable(t *testing.T, d *Device, points any, reduced []fr.Element, window, copies int) {
	t.Helper()
	n := len(reduced)
	canon := canonicalAbove(reduced)
	var tab MSMTable
	var free func()
	var msm func(scalars Ptr, form ScalarForm, o MSMOptions) (bool, error)
	switch p := points.(type) {
	case []bls12381.G1Affine:
		want := cpuMSM(t, p, reduced)
		tab, free = buildTable(t, d, p, false, window, copies)
		msm = func(ps Ptr, form ScalarForm, o MSMOptions) (bool, error) {
			jac, _, err := d.MSMWithStats(tab.Ptr, ps, n, form, o, DefaultStream)
			var got bls12381.G1Affine
			got.FromJacobian(&jac)
			return got.Equal(&want), err
		}
	case []bls12381.G2Affine:
		want := cpuMSMG2(t, p, reduced)
		tab, free = buildTable(t, d, p, true, window, copies)
		msm = func(ps Ptr, form ScalarForm, o MSMOptions) (bool, error) {
			jac, _, err := d.MSMG2WithStats(tab.Ptr, ps, n, form, o, DefaultStream)
			var got bls12381.G2Affine
			got.FromJacobian(&jac)
			return got.Equal(&want), err
		}
	default:
		t.Fatalf("points of type %T", points)
	}
	defer free()
	mont, err := Upload(d, reduced, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(mont)
	can, err := Upload(d, canon, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(can)
	for _, split := range []bool{false, true} {
		for _, form := range []ScalarForm{Montgomery, Canonical} {
			ps := mont
			if form == Canonical {
				ps = can
			}
			equal, err := msm(ps, form, tab.Options(MSMOptions{Split: split}))
			if err != nil {
				t.Fatalf("split=%v form=%d: %v", split, form, err)
			}
			if !equal {
				t.Fatalf("split=%v form=%d: MSM over a table of %d copies at window %d differs from gnark-crypto", split, form, tab.Copies, tab.Window)
			}
		}
	}
}

// TestMSMTableRefused: shapes the library cannot build are refused before
// anything is allocated, and a table MSM needs its window.
func TestMSMTableRefused(t *testing.T) {
	d := testDevice(t)
	for _, c := range []struct{ n, window, copies int }{
		{0, 0, 0}, {100, 3, 2}, {100, 25, 2}, {100, 0, 33}, {100, 0, -1}, {1 << 27, 0, 16}, {1 << 28, 12, 0},
	} {
		if _, err := d.MSMTableShape(c.n, false, c.window, c.copies); err == nil {
			t.Errorf("n=%d window=%d copies=%d: shape accepted", c.n, c.window, c.copies)
		}
	}
	points := randomPoints(64)
	tab, free := buildTable(t, d, points, false, 0, 4)
	defer free()
	ps, err := Upload(d, randomFr(64), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(ps)
	_, err = d.MSM(tab.Ptr, ps, 64, Montgomery, MSMOptions{Copies: tab.Copies}, DefaultStream)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != codeInvalidValue {
		t.Fatalf("table MSM without its window: %v, want cudaErrorInvalidValue", err)
	}
	if _, err := d.MSMScratchBytes(64, false, MSMOptions{Copies: 33, Window: 10}); err == nil {
		t.Fatal("33 copies accepted")
	}
}

// TestMSMTableScratch: a table MSM runs in the scratch its sizing call
// gives, with and without the split, and a table of one copy per window
// needs less than the plain MSM at its window (h1: 3.6 MB against 18.7 MB
// at n = 5000).
func TestMSMTableScratch(t *testing.T) {
	d := testDevice(t)
	const n = 5000
	points := randomPoints(n)
	reduced := mixScalars(bitsMix(0.9), n, 7)
	want := cpuMSM(t, points, reduced)
	tab, free := buildTable(t, d, points, false, 0, 0)
	defer free()
	ps, err := Upload(d, reduced, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(ps)
	for _, split := range []bool{false, true} {
		o := tab.Options(MSMOptions{Split: split})
		b, err := d.MSMScratchBytes(n, false, o)
		if err != nil {
			t.Fatal(err)
		}
		// One virtual window: one set of buckets where the plain MSM at the
		// same window keeps nw of them.
		plain, err := d.MSMScratchBytes(n, false, MSMOptions{Split: split, Window: tab.Window})
		if err != nil {
			t.Fatal(err)
		}
		if b >= plain {
			t.Errorf("split=%v: table scratch %d not below the plain MSM's %d at the same window", split, b, plain)
		}
		if o.Scratch.Ptr, err = d.Malloc(b); err != nil {
			t.Fatal(err)
		}
		o.Scratch.Bytes = b
		jac, err := d.MSM(tab.Ptr, ps, n, Montgomery, o, DefaultStream)
		d.Free(o.Scratch.Ptr)
		if err != nil {
			t.Fatalf("split=%v: %v", split, err)
		}
		var got bls12381.G1Affine
		got.FromJacobian(&jac)
		if !got.Equal(&want) {
			t.Fatalf("split=%v: differs from gnark-crypto", split)
		}
	}
}
