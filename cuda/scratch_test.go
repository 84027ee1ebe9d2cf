package cuda

import (
	"errors"
	"fmt"
	"testing"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/cuzk/cuzk/gpu"
)

// TestMSMInCallerScratch: an MSM given a scratch buffer of exactly the size
// its sizing call names gives gnark-crypto's sum (so the library took no
// more than it said), for the mixes of 0/1 scalars that move the split's
// Pippenger between window sizes. Without the split the size is exact: a
// buffer one byte short fails as an out-of-memory error, and the device
// then works as before.
func TestMSMInCallerScratch(t *testing.T) {
	d := testDevice(t)
	for _, g2 := range []bool{false, true} {
		for _, n := range []int{1, 100, 4097, 1<<14 + 3} {
			for _, mix := range splitMixes {
				for _, split := range []bool{false, true} {
					name := fmt.Sprintf("%s n=%d %s split=%v", groupName(g2), n, mix.name, split)
					scalars := mixScalars(mix.mix, n, uint64(n))
					points := groupPoints(g2, n)
					opt := MSMOptions{Split: split}
					need, err := d.MSMScratchBytes(n, g2, opt)
					if err != nil || need <= 0 {
						t.Fatalf("%s: scratch size %d, %v", name, need, err)
					}
					buf, err := d.Malloc(need)
					if err != nil {
						t.Fatal(err)
					}
					opt.Scratch = Scratch{buf, need}
					equal, err := msmEqualsCPU(t, d, points, scalars, opt)
					if err != nil || !equal {
						d.Free(buf)
						t.Fatalf("%s in %d bytes of scratch: equal %v, %v", name, need, equal, err)
					}
					if !split {
						opt.Scratch = Scratch{buf, need - 1}
						if _, err := msmEqualsCPU(t, d, points, scalars, opt); !errors.Is(err, gpu.ErrOutOfMemory) {
							d.Free(buf)
							t.Fatalf("%s in a byte less scratch: got %v, want an out-of-memory error", name, err)
						}
					}
					if err := d.Free(buf); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	// The device is unharmed: the same MSM in pool scratch still agrees.
	points, scalars := randomPoints(1000), randomFr(1000)
	if equal, err := msmEqualsCPU(t, d, points, scalars, MSMOptions{Split: true}); err != nil || !equal {
		t.Fatalf("after the failed calls: equal %v, %v", equal, err)
	}
}

// msmEqualsCPU runs one device MSM (G1 or G2 by the points' type) and says
// whether it equals gnark-crypto's.
func msmEqualsCPU(t *testing.T, d *Device, points any, scalars []fr.Element, opt MSMOptions) (bool, error) {
	t.Helper()
	n := len(scalars)
	switch p := points.(type) {
	case []bls12381.G1Affine:
		want := cpuMSM(t, p, scalars)
		pp, ps, free := uploadMSM(t, d, p, scalars)
		defer free()
		jac, err := d.MSM(pp, ps, n, Montgomery, opt, DefaultStream)
		var got bls12381.G1Affine
		got.FromJacobian(&jac)
		return got.Equal(&want), err
	case []bls12381.G2Affine:
		want := cpuMSMG2(t, p, scalars)
		pp, ps, free := uploadMSM(t, d, p, scalars)
		defer free()
		jac, err := d.MSMG2(pp, ps, n, Montgomery, opt, DefaultStream)
		var got bls12381.G2Affine
		got.FromJacobian(&jac)
		return got.Equal(&want), err
	}
	t.Fatalf("points of type %T", points)
	return false, nil
}

// TestScratchSizesGrow: the sizing calls are monotone where the planner
// relies on it (a chunk's scratch bounds every smaller call's), and the NTT
// and domain sizes are what the transform and the tables take.
func TestScratchSizesGrow(t *testing.T) {
	d := testDevice(t)
	for _, g2 := range []bool{false, true} {
		for _, split := range []bool{false, true} {
			prev := int64(0)
			for _, n := range []int{1, 1 << 10, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 27} {
				b, err := d.MSMScratchBytes(n, g2, MSMOptions{Split: split})
				if err != nil {
					t.Fatal(err)
				}
				if b < prev || b < 8*int64(n) {
					t.Fatalf("%s split=%v: %d points take %d bytes of scratch (the size before: %d)", groupName(g2), split, n, b, prev)
				}
				prev = b
				t.Logf("%s split=%v: %d points: %s", groupName(g2), split, n, gpu.FormatBytes(b))
			}
		}
	}
	for _, logN := range []int{0, 9, 10, 18, 24, 27} {
		s, err := d.NTTScratchBytes(logN)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := d.DomainBytes(logN)
		if err != nil {
			t.Fatal(err)
		}
		if s != 0 && s != int64(1)<<logN*fr.Bytes || tb < int64(1)<<logN/2*fr.Bytes {
			t.Fatalf("2^%d: NTT scratch %d, domain %d bytes", logN, s, tb)
		}
	}
}

// TestNTTInCallerScratch: an NTT given its scratch agrees with gnark-crypto;
// given too little it fails as an out-of-memory error before queueing
// anything. With the default groups and with CUZK_NTT_GROUP_BITS=12 (2^16
// in 8 + 8 stages either way; what changes is the knob's path through the
// scratch accounting).
func TestNTTInCallerScratch(t *testing.T) {
	d := testDevice(t)
	const logN = 16
	n := 1 << logN
	dom, err := d.NewDomain(logN, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Close()
	data, err := d.Malloc(int64(n) * fr.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(data)
	for _, group := range []string{"", "12"} {
		setNTTVariant(t, nttVariant{radix: "8", mul: "1", group: group}, logN)
		need, err := d.NTTScratchBytes(logN)
		if err != nil || need == 0 {
			t.Fatalf("2^%d takes %d bytes of scratch, %v", logN, need, err)
		}
		scratch, err := d.Malloc(need)
		if err != nil {
			t.Fatal(err)
		}
		in := randomFr(n)
		want := gnarkNTT(fft.NewDomain(uint64(n)), in, false, true)
		if err := CopyIn(d, data, in, DefaultStream); err != nil {
			t.Fatal(err)
		}
		if err := dom.NTTIn(data, Scratch{scratch, need - 1}, false, true, DefaultStream); !errors.Is(err, gpu.ErrOutOfMemory) {
			t.Fatalf("NTT with a byte too little scratch: got %v, want an out-of-memory error", err)
		}
		if err := dom.NTTIn(data, Scratch{scratch, need}, false, true, DefaultStream); err != nil {
			t.Fatal(err)
		}
		got := make([]fr.Element, n)
		if err := CopyOut(d, got, data, DefaultStream); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !got[i].Equal(&want[i]) {
				t.Fatalf("CUZK_NTT_GROUP_BITS=%s: element %d differs from gnark-crypto", group, i)
			}
		}
		if err := d.Free(scratch); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNTTInPlace: without scratch the NTT runs in place (groups that write
// where they read, then a bit-reversal pass with the inverse's scale) and
// agrees with gnark-crypto in all four modes and with either Fr product
// (CUZK_NTT_MUL), at sizes of one group (which never needed scratch) and of
// several.
func TestNTTInPlace(t *testing.T) {
	d := testDevice(t)
	for _, logN := range []int{1, 9, 10, 13, 18, 20} {
		n := 1 << logN
		dom, err := d.NewDomain(logN, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := d.Malloc(int64(n) * fr.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		gd := fft.NewDomain(uint64(n))
		for _, inverse := range []bool{false, true} {
			for _, coset := range []bool{false, true} {
				in := randomFr(n)
				want := gnarkNTT(gd, in, inverse, coset)
				// In place every group runs k_dif_group whatever the radix:
				// only the product and the grouping vary (CUZK_NTT_GROUP_BITS
				// 12: 2^13 in 7 + 6 stages, 2^20 in 10 + 10; split "front":
				// 2^13 in 9 + 4).
				for _, v := range []struct{ mul, group, split string }{{"0", "", ""}, {"1", "", ""}, {"1", "12", ""}, {"1", "", "front"}} {
					mul := v.mul
					setNTTVariant(t, nttVariant{radix: "4", mul: mul, group: v.group, split: v.split}, logN)
					if err := CopyIn(d, buf, in, DefaultStream); err != nil {
						t.Fatal(err)
					}
					if err := dom.NTTIn(buf, Scratch{}, inverse, coset, DefaultStream); err != nil {
						t.Fatalf("2^%d in place: %v", logN, err)
					}
					got := make([]fr.Element, n)
					if err := CopyOut(d, got, buf, DefaultStream); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if !got[i].Equal(&want[i]) {
							t.Fatalf("2^%d in place, inverse=%v coset=%v CUZK_NTT_MUL=%s CUZK_NTT_GROUP_BITS=%s split %q: element %d differs from gnark-crypto",
								logN, inverse, coset, mul, v.group, v.split, i)
						}
					}
				}
			}
		}
		_ = d.Free(buf)
		_ = dom.Close()
	}
}
