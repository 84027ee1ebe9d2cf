package cuda

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/cuzk/cuzk/gpu"
)

// requireGPU is set on machines that have a GPU, where a skip would hide a
// failure.
var requireGPU = os.Getenv("CUZK_REQUIRE_GPU") == "1"

var (
	devOnce sync.Once
	devTest *Device
	devErr  error
)

func testDevice(t testing.TB) *Device {
	t.Helper()
	devOnce.Do(func() { devTest, devErr = Open("") })
	if devErr != nil {
		if requireGPU {
			t.Fatalf("CUZK_REQUIRE_GPU=1 but no GPU backend: %v", devErr)
		}
		t.Skipf("no GPU backend: %v", devErr)
	}
	return devTest
}

func TestLoadMissingLibrary(t *testing.T) {
	_, err := Load("/nonexistent/" + LibraryName)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Load of a missing file: got %v, want ErrUnavailable", err)
	}
	t.Setenv(EnvLibrary, "/nonexistent/elsewhere.so")
	if _, err := Open(""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open with %s pointing nowhere: got %v, want ErrUnavailable", EnvLibrary, err)
	}
}

func TestErrorMatching(t *testing.T) {
	oom := &Error{Op: "cuzk_malloc", Code: codeMemoryAllocation, Name: "cudaErrorMemoryAllocation"}
	if !errors.Is(fmt.Errorf("wrapped: %w", oom), gpu.ErrOutOfMemory) {
		t.Fatal("allocation failure does not match gpu.ErrOutOfMemory")
	}
	if errors.Is(oom, ErrUnavailable) {
		t.Fatal("allocation failure matches ErrUnavailable")
	}
	nodev := &Error{Op: "cuzk_device_count", Code: codeNoDevice, Name: "cudaErrorNoDevice"}
	if !errors.Is(nodev, ErrUnavailable) || errors.Is(nodev, gpu.ErrOutOfMemory) {
		t.Fatal("no-device error matched wrongly")
	}
}

func TestDeviceBasics(t *testing.T) {
	d := testDevice(t)
	p, err := d.Properties()
	if err != nil {
		t.Fatal(err)
	}
	free, total, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d SMs, cc %d.%d, %s total, %s free", p.Name, p.SMs, p.Major, p.Minor,
		gpu.FormatBytes(total), gpu.FormatBytes(free))
	if total <= 0 || free <= 0 || free > total {
		t.Fatalf("mem info free=%d total=%d", free, total)
	}

	if _, err := d.Malloc(1 << 50); !errors.Is(err, gpu.ErrOutOfMemory) {
		t.Fatalf("1 PiB malloc: got %v, want gpu.ErrOutOfMemory", err)
	} else {
		t.Logf("1 PiB malloc: %v", err)
	}

	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	if _, err := d.MallocAsync(1<<50, s); !errors.Is(err, gpu.ErrOutOfMemory) {
		t.Fatalf("1 PiB async malloc: got %v, want gpu.ErrOutOfMemory", err)
	}

	// Round trip through a pool allocation, with events around the copy.
	const n = 1 << 20
	in := make([]uint64, n)
	for i := range in {
		in[i] = mrand.Uint64()
	}
	buf, err := d.MallocAsync(n*8, s)
	if err != nil {
		t.Fatal(err)
	}
	e0, _ := d.NewEvent()
	e1, _ := d.NewEvent()
	defer d.DestroyEvent(e0)
	defer d.DestroyEvent(e1)
	if err := d.RecordEvent(e0, s); err != nil {
		t.Fatal(err)
	}
	if err := CopyIn(d, buf, in, s); err != nil {
		t.Fatal(err)
	}
	buf2, err := d.Malloc(n * 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CopyDevice(buf2, buf, n*8, s); err != nil {
		t.Fatal(err)
	}
	if err := d.RecordEvent(e1, s); err != nil {
		t.Fatal(err)
	}
	if err := d.EventSync(e1); err != nil {
		t.Fatal(err)
	}
	if el, err := d.Elapsed(e0, e1); err != nil || el < 0 {
		t.Fatalf("elapsed %v, %v", el, err)
	}
	out := make([]uint64, n)
	if err := CopyOut(d, out, buf2, s); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if in[i] != out[i] {
			t.Fatalf("word %d: %x != %x", i, out[i], in[i])
		}
	}
	// The same round trip through pinned memory, asynchronously.
	pin, err := d.HostAlloc(n * 8)
	if err != nil {
		t.Fatal(err)
	}
	pinned := unsafe.Slice((*uint64)(pin.Pointer()), n)
	copy(pinned, in)
	if err := d.CopyInAsync(buf, pin, 0, n*8, s); err != nil {
		t.Fatal(err)
	}
	// The copy reads the pinned buffer when the stream gets to it, not now.
	if err := d.StreamSync(s); err != nil {
		t.Fatal(err)
	}
	clear(pinned)
	if err := d.CopyOutAsync(pin, 0, buf, n*8, s); err != nil {
		t.Fatal(err)
	}
	if err := d.StreamSync(s); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if pinned[i] != in[i] {
			t.Fatalf("pinned word %d: %x != %x", i, pinned[i], in[i])
		}
	}
	if err := d.CopyInAsync(buf, pin, 8, n*8, s); err == nil {
		t.Fatal("async copy past the pinned buffer accepted")
	}
	if err := d.HostFree(pin); err != nil {
		t.Fatal(err)
	}
	if err := d.Memset(buf2, 0, n*8, s); err != nil {
		t.Fatal(err)
	}
	if err := d.FreeAsync(buf, s); err != nil {
		t.Fatal(err)
	}
	if err := d.StreamSync(s); err != nil {
		t.Fatal(err)
	}
	if err := d.TrimPool(0); err != nil {
		t.Fatal(err)
	}
	if err := d.Free(buf2); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func randomFr(n int) []fr.Element {
	v := make([]fr.Element, n)
	for i := range v {
		v[i].MustSetRandom()
	}
	return v
}

// gnarkNTT is the CPU reference in natural order.
func gnarkNTT(dom *fft.Domain, v []fr.Element, inverse, coset bool) []fr.Element {
	out := append([]fr.Element(nil), v...)
	var opts []fft.Option
	if coset {
		opts = append(opts, fft.OnCoset())
	}
	if inverse {
		dom.FFTInverse(out, fft.DIF, opts...)
	} else {
		dom.FFT(out, fft.DIF, opts...)
	}
	fft.BitReverse(out)
	return out
}

// nttVariant is one kernel choice a library build makes at run time, as
// the environment variables that pick it: the group kernel (CUZK_NTT_RADIX),
// the Fr product (CUZK_NTT_MUL), groups of at most 9 stages (group "") or
// of up to 12 (CUZK_NTT_GROUP_BITS=12: 2^24 in 12 + 12 stages, the split
// variant of k_dif_group_r at every group of 12), the radix-8 kernel's
// twiddle copy and L2 prefetch (CUZK_NTT_AHEAD), group sizes other than the
// default ones (split "front": groups of 9 first, the rest last, the
// default from 2^24 up; "back": the rest first; "balanced": sizes within
// one of each other, the default below 2^24; CUZK_NTT_SPLIT, set per size
// by setNTTVariant), and the tile size (CUZK_NTT_TILE_BITS).
type nttVariant struct{ radix, mul, group, ahead, split, tile string }

// nttVariants are the variants TestNTT runs against gnark-crypto, so that
// the card checks every variant it times.
var nttVariants = []nttVariant{
	{"2", "0", "", "", "", ""}, {"4", "0", "", "", "", ""}, {"8", "0", "", "", "", ""},
	{"2", "1", "", "", "", ""}, {"4", "1", "", "", "", ""}, {"8", "1", "", "", "", ""},
	{"2", "1", "12", "", "", ""}, {"4", "1", "12", "", "", ""}, {"8", "0", "12", "", "", ""}, {"8", "1", "12", "", "", ""},
	{"8", "1", "", "1", "", ""}, {"8", "1", "", "2", "", ""}, {"8", "0", "", "3", "front", ""}, {"8", "1", "", "3", "back", ""},
	{"8", "1", "", "", "front", "10"},
}

// nttSplit is CUZK_NTT_SPLIT for a 2^logN transform cut as split says:
// the default number of groups (at most 9 stages each), all but one of 9
// stages and the one left first ("back") or last ("front"), or sizes
// within one of each other, the longer first ("balanced"); "" where the
// default has one group or split is "".
func nttSplit(logN int, split string) string {
	groups := (logN + 8) / 9
	if split == "" || groups < 2 {
		return ""
	}
	sizes := make([]string, groups)
	for i := range sizes {
		k := 9
		switch {
		case split == "balanced":
			k = logN / groups
			if i < logN%groups {
				k++
			}
		case split == "front" && i == groups-1, split == "back" && i == 0:
			k = logN - 9*(groups-1)
		}
		sizes[i] = strconv.Itoa(k)
	}
	return strings.Join(sizes, ",")
}

// setNTTVariant selects variant v for a 2^logN transform for the rest of
// the test.
func setNTTVariant(t *testing.T, v nttVariant, logN int) {
	t.Setenv("CUZK_NTT_RADIX", v.radix)
	t.Setenv("CUZK_NTT_MUL", v.mul)
	t.Setenv("CUZK_NTT_GROUP_BITS", v.group)
	t.Setenv("CUZK_NTT_AHEAD", v.ahead)
	t.Setenv("CUZK_NTT_SPLIT", nttSplit(logN, v.split))
	t.Setenv("CUZK_NTT_TILE_BITS", v.tile)
}

// TestNTT: every size up to 2^20, forward and inverse, on the subgroup and on
// the coset, in every kernel variant, agrees with gnark-crypto.
func TestNTT(t *testing.T) {
	d := testDevice(t)
	maxLog := 20
	if testing.Short() {
		maxLog = 14
	}
	for logN := 0; logN <= maxLog; logN++ {
		n := 1 << logN
		dom, err := d.NewDomain(logN, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		gd := fft.NewDomain(uint64(n))
		buf, err := d.Malloc(int64(n) * fr.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, inverse := range []bool{false, true} {
			for _, coset := range []bool{false, true} {
				in := randomFr(n)
				want := gnarkNTT(gd, in, inverse, coset)
				for _, v := range nttVariants {
					setNTTVariant(t, v, logN)
					if err := CopyIn(d, buf, in, DefaultStream); err != nil {
						t.Fatal(err)
					}
					if err := dom.NTT(buf, inverse, coset, DefaultStream); err != nil {
						t.Fatal(err)
					}
					got := make([]fr.Element, n)
					if err := CopyOut(d, got, buf, DefaultStream); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if !got[i].Equal(&want[i]) {
							t.Fatalf("2^%d inverse=%v coset=%v variant %+v (CUZK_NTT_SPLIT=%q): element %d differs from gnark-crypto",
								logN, inverse, coset, v, nttSplit(logN, v.split), i)
						}
					}
				}
			}
		}
		if err := d.Free(buf); err != nil {
			t.Fatal(err)
		}
		if err := dom.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNTTRoundTrip checks that the large sizes invert: coset forward then
// coset inverse gives back the input, with the default groups and with
// CUZK_NTT_GROUP_BITS=12 (2^22 in 11 + 11 stages, 2^24 in 12 + 12).
func TestNTTRoundTrip(t *testing.T) {
	d := testDevice(t)
	if testing.Short() {
		t.Skip("large sizes")
	}
	for _, logN := range []int{22, 24} {
		n := 1 << logN
		dom, err := d.NewDomain(logN, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		in := randomFr(n)
		gd := fft.NewDomain(uint64(n))
		for _, group := range []string{"", "12"} {
			setNTTVariant(t, nttVariant{radix: "8", mul: "1", group: group}, logN)
			buf, err := Upload(d, in, DefaultStream)
			if err != nil {
				t.Fatal(err)
			}
			if err := dom.NTT(buf, false, true, DefaultStream); err != nil {
				t.Fatal(err)
			}
			mid := make([]fr.Element, n)
			if err := CopyOut(d, mid, buf, DefaultStream); err != nil {
				t.Fatal(err)
			}
			// Spot-check the evaluations against the polynomial at a few points.
			var g, w fr.Element
			g = dom.Coset
			for _, i := range []int{0, 1, n / 3, n - 1} {
				var x fr.Element
				w.Exp(gd.Generator, big.NewInt(int64(i)))
				x.Mul(&g, &w)
				var acc fr.Element // Horner
				for j := n - 1; j >= 0; j-- {
					acc.Mul(&acc, &x).Add(&acc, &in[j])
				}
				if !acc.Equal(&mid[i]) {
					t.Fatalf("2^%d coset NTT, CUZK_NTT_GROUP_BITS=%s: evaluation %d wrong", logN, group, i)
				}
			}
			if err := dom.NTT(buf, true, true, DefaultStream); err != nil {
				t.Fatal(err)
			}
			out := make([]fr.Element, n)
			if err := CopyOut(d, out, buf, DefaultStream); err != nil {
				t.Fatal(err)
			}
			for i := range in {
				if !in[i].Equal(&out[i]) {
					t.Fatalf("2^%d round trip, CUZK_NTT_GROUP_BITS=%s: element %d differs", logN, group, i)
				}
			}
			_ = d.Free(buf)
		}
		_ = dom.Close()
	}
}

// TestNTTGroupsLarge: above TestNTT's 2^20, where CUZK_NTT_GROUP_BITS=12
// runs groups of 11 and 12 stages (2^21 in 11 + 10, 2^22 in 11 + 11, 2^23
// in 12 + 11, 2^24 in 12 + 12: the split variant with twiddles, which no
// size up to 2^20 reaches) and the default runs three groups of at most 8,
// both give the same vector in all four modes, with either Fr product, and
// so does the in-place transform (no scratch: k_dif_group's groups of 12,
// then the bit reversal) with groups of 12. The
// default is checked against gnark-crypto up to 2^20 and by the round trip
// and its evaluations at 2^22 and 2^24; a gnark-crypto transform at 2^24
// takes seconds a mode on the CPU, a second GPU transform milliseconds. The
// input is a cheap recurrence, not crypto/rand: 2^24 draws took longer than
// the transforms.
func TestNTTGroupsLarge(t *testing.T) {
	d := testDevice(t)
	if testing.Short() {
		t.Skip("large sizes")
	}
	for logN := 21; logN <= 24; logN++ {
		n := 1 << logN
		dom, err := d.NewDomain(logN, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		in := make([]fr.Element, n)
		ab := randomFr(3)
		in[0] = ab[0]
		for i := 1; i < n; i++ {
			in[i].Mul(&in[i-1], &ab[1]).Add(&in[i], &ab[2])
		}
		buf, err := d.Malloc(int64(n) * fr.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, inverse := range []bool{false, true} {
			for _, coset := range []bool{false, true} {
				for _, mul := range []string{"0", "1"} {
					// The default first, then each variant and whether it
					// runs in place (no scratch).
					variants := []struct {
						v       nttVariant
						inPlace bool
					}{
						{nttVariant{radix: "8", mul: mul}, false},
						{nttVariant{radix: "8", mul: mul, group: "12"}, false},
						{nttVariant{radix: "8", mul: mul, group: "12"}, true},
						{nttVariant{radix: "8", mul: mul, ahead: "1"}, false},
						{nttVariant{radix: "8", mul: mul, ahead: "2", split: "front"}, false},
						{nttVariant{radix: "8", mul: mul, ahead: "3", split: "back"}, false},
						{nttVariant{radix: "8", mul: mul, split: "balanced"}, false},
						{nttVariant{radix: "8", mul: mul, split: "front", tile: "11"}, false},
						{nttVariant{radix: "4", mul: mul, split: "balanced"}, false},
					}
					var want []fr.Element
					for vi, vr := range variants {
						setNTTVariant(t, vr.v, logN)
						if err := CopyIn(d, buf, in, DefaultStream); err != nil {
							t.Fatal(err)
						}
						if vr.inPlace {
							err = dom.NTTIn(buf, Scratch{}, inverse, coset, DefaultStream)
						} else {
							err = dom.NTT(buf, inverse, coset, DefaultStream)
						}
						if err != nil {
							t.Fatal(err)
						}
						got := make([]fr.Element, n)
						if err := CopyOut(d, got, buf, DefaultStream); err != nil {
							t.Fatal(err)
						}
						if vi == 0 {
							want = got
							continue
						}
						for i := range want {
							if !got[i].Equal(&want[i]) {
								t.Fatalf("2^%d inverse=%v coset=%v: element %d of variant %+v (in place: %v, CUZK_NTT_SPLIT=%q) differs from the default's",
									logN, inverse, coset, i, vr.v, vr.inPlace, nttSplit(logN, vr.v.split))
							}
						}
					}
				}
			}
		}
		_ = d.Free(buf)
		_ = dom.Close()
	}
}

func TestGrothH(t *testing.T) {
	d := testDevice(t)
	for _, logN := range []int{0, 3, 12} {
		n := 1 << logN
		dom, err := d.NewDomain(logN, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		a, b, c := randomFr(n), randomFr(n), randomFr(n)
		pa, _ := Upload(d, a, DefaultStream)
		pb, _ := Upload(d, b, DefaultStream)
		pc, _ := Upload(d, c, DefaultStream)
		if err := dom.GrothH(pa, pb, pc, DefaultStream); err != nil {
			t.Fatal(err)
		}
		got := make([]fr.Element, n)
		if err := CopyOut(d, got, pa, DefaultStream); err != nil {
			t.Fatal(err)
		}
		// The vanishing polynomial x^n - 1 at g*w^i is g^n - 1 for every i.
		gd := fft.NewDomain(uint64(n))
		var zn, one fr.Element
		one.SetOne()
		zn.Exp(gd.FrMultiplicativeGen, big.NewInt(int64(n))).Sub(&zn, &one)
		for i := range got {
			var want fr.Element
			want.Mul(&a[i], &b[i]).Sub(&want, &c[i])
			var check fr.Element
			check.Mul(&got[i], &zn)
			if !check.Equal(&want) {
				t.Fatalf("2^%d: h[%d] * (g^n - 1) != a*b - c", logN, i)
			}
		}
		for _, p := range []Ptr{pa, pb, pc} {
			_ = d.Free(p)
		}
		_ = dom.Close()
	}
}

// randomPoints returns n random G1 points (distinct with overwhelming
// probability).
func randomPoints(n int) []bls12381.G1Affine {
	_, _, g1, _ := bls12381.Generators()
	return bls12381.BatchScalarMultiplicationG1(&g1, randomFr(n))
}

func cpuMSM(t testing.TB, points []bls12381.G1Affine, scalars []fr.Element) bls12381.G1Affine {
	t.Helper()
	var r bls12381.G1Affine
	if len(points) == 0 {
		return r
	}
	if _, err := r.MultiExp(points, scalars, ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	return r
}

// uploadMSM puts an MSM's points and scalars ([]fr.Element or [][4]uint64)
// on the device; free frees both.
func uploadMSM[P any](t testing.TB, d *Device, points []P, scalars any) (pp, ps Ptr, free func()) {
	t.Helper()
	var err error
	if pp, err = Upload(d, points, DefaultStream); err != nil {
		t.Fatal(err)
	}
	switch s := scalars.(type) {
	case []fr.Element:
		ps, err = Upload(d, s, DefaultStream)
	case [][4]uint64:
		ps, err = Upload(d, s, DefaultStream)
	default:
		err = fmt.Errorf("scalars of type %T", scalars)
	}
	if err != nil {
		d.Free(pp)
		t.Fatal(err)
	}
	return pp, ps, func() { d.Free(pp); d.Free(ps) }
}

func gpuMSM(t testing.TB, d *Device, points []bls12381.G1Affine, scalars any, n int, form ScalarForm, opt MSMOptions) bls12381.G1Affine {
	t.Helper()
	pp, ps, free := uploadMSM(t, d, points, scalars)
	defer free()
	jac, err := d.MSM(pp, ps, n, form, opt, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	var r bls12381.G1Affine
	r.FromJacobian(&jac)
	if !r.IsOnCurve() {
		t.Fatal("MSM result is not on the curve")
	}
	return r
}

// msmVariants are the G1 MSM's run-time kernel choices, as the environment
// variables that pick them: the field operations of the point formulas
// (CUZK_MSM_MUL, bits: 1 fused sums of two products, 2 squares by rows) with
// the bucket sums' register cap (CUZK_MSM_REDUCE_BLOCKS). The MSM tests run
// each against gnark-crypto, so the card checks every variant it times.
var msmVariants = []struct{ mul, reduce string }{
	{"0", "3"}, {"1", "3"}, {"2", "3"}, {"3", "3"},
	{"0", "2"}, {"1", "2"}, {"2", "2"}, {"3", "2"},
}

// setMSMVariant selects variant v for the rest of the test.
func setMSMVariant(t *testing.T, mul, reduce string) {
	t.Setenv("CUZK_MSM_MUL", mul)
	t.Setenv("CUZK_MSM_REDUCE_BLOCKS", reduce)
}

// forMSMVariants runs f once per variant, as a subtest with the variant set.
func forMSMVariants(t *testing.T, f func(t *testing.T)) {
	for _, v := range msmVariants {
		t.Run("CUZK_MSM_MUL="+v.mul+",CUZK_MSM_REDUCE_BLOCKS="+v.reduce, func(t *testing.T) {
			setMSMVariant(t, v.mul, v.reduce)
			f(t)
		})
	}
}

func TestMSM(t *testing.T) {
	d := testDevice(t)
	sizes := []int{1, 2, 3, 7, 64, 100, 1000, 4097, 1<<14 + 5, 1<<17 - 1}
	if !testing.Short() {
		sizes = append(sizes, 1<<20)
	}
	for _, n := range sizes {
		points := randomPoints(n)
		scalars := randomFr(n)
		want := cpuMSM(t, points, scalars)
		forMSMVariants(t, func(t *testing.T) {
			got := gpuMSM(t, d, points, scalars, n, Montgomery, MSMOptions{})
			if !got.Equal(&want) {
				t.Fatalf("n=%d random: GPU MSM differs from gnark-crypto", n)
			}
		})
	}
}

// TestMSMEdgeCases: zero scalars, points at infinity, repeated points (the
// bucket sums hit doubling and cancellation), equal scalars (one huge
// bucket per window), and canonical scalars at or above r.
func TestMSMEdgeCases(t *testing.T) {
	d := testDevice(t)
	const n = 5000
	base := randomPoints(n)

	cases := map[string]func() ([]bls12381.G1Affine, []fr.Element){
		"zero scalars": func() ([]bls12381.G1Affine, []fr.Element) {
			s := randomFr(n)
			for i := 0; i < n; i += 3 {
				s[i].SetZero()
			}
			return base, s
		},
		"all zero": func() ([]bls12381.G1Affine, []fr.Element) { return base, make([]fr.Element, n) },
		"infinity points": func() ([]bls12381.G1Affine, []fr.Element) {
			p := append([]bls12381.G1Affine(nil), base...)
			for i := 0; i < n; i += 7 {
				p[i].SetInfinity()
			}
			return p, randomFr(n)
		},
		"repeated points": func() ([]bls12381.G1Affine, []fr.Element) {
			p := make([]bls12381.G1Affine, n)
			for i := range p {
				p[i] = base[i%3]
			}
			return p, randomFr(n)
		},
		"equal scalars": func() ([]bls12381.G1Affine, []fr.Element) {
			s := make([]fr.Element, n)
			var x fr.Element
			x.MustSetRandom()
			for i := range s {
				s[i] = x
			}
			return base, s
		},
		"repeated points, equal scalars": func() ([]bls12381.G1Affine, []fr.Element) {
			p := make([]bls12381.G1Affine, n)
			s := make([]fr.Element, n)
			var x fr.Element
			x.MustSetRandom()
			for i := range p {
				p[i] = base[0]
				s[i] = x
			}
			return p, s
		},
		"cancelling pairs": func() ([]bls12381.G1Affine, []fr.Element) {
			p := make([]bls12381.G1Affine, n)
			s := randomFr(n)
			for i := 0; i < n; i += 2 {
				p[i] = base[i]
				if i+1 < n {
					p[i+1].Neg(&base[i])
					s[i+1] = s[i]
				}
			}
			return p, s
		},
		"small and top scalars": func() ([]bls12381.G1Affine, []fr.Element) {
			s := make([]fr.Element, n)
			for i := range s {
				switch i % 4 {
				case 0:
					s[i].SetUint64(uint64(i))
				case 1:
					s[i].SetOne()
					s[i].Neg(&s[i]) // r - 1
				case 2:
					s[i].SetUint64(1 << 15)
				default:
					s[i].MustSetRandom()
				}
			}
			return base, s
		},
	}
	forMSMVariants(t, func(t *testing.T) {
		for name, mk := range cases {
			t.Run(name, func(t *testing.T) {
				points, scalars := mk()
				want := cpuMSM(t, points, scalars)
				got := gpuMSM(t, d, points, scalars, n, Montgomery, MSMOptions{})
				if !got.Equal(&want) {
					t.Fatalf("GPU MSM differs from gnark-crypto")
				}
			})
		}
	})

	t.Run("canonical scalars >= r", func(t *testing.T) {
		r := fr.Modulus()
		limit := new(big.Int).Lsh(big.NewInt(1), 256)
		raw := make([][4]uint64, n)
		reduced := make([]fr.Element, n)
		for i := range raw {
			v, _ := rand.Int(rand.Reader, limit)
			if i%5 == 0 {
				v.Add(r, big.NewInt(int64(i))) // just above r
			}
			if i == 1 {
				v.Sub(limit, big.NewInt(1)) // 2^256 - 1
			}
			words := v.Bits()
			for j := 0; j < len(words) && j < 4; j++ {
				raw[i][j] = uint64(words[j])
			}
			reduced[i].SetBigInt(v)
		}
		want := cpuMSM(t, base, reduced)
		got := gpuMSM(t, d, base, raw, n, Canonical, MSMOptions{})
		if !got.Equal(&want) {
			t.Fatalf("GPU MSM differs from gnark-crypto")
		}
	})
}

// TestMSMWindows forces every window size, including those that divide 255
// (the top digit's carry needs a window of its own).
func TestMSMWindows(t *testing.T) {
	d := testDevice(t)
	const n = 3001
	points := randomPoints(n)
	scalars := randomFr(n)
	want := cpuMSM(t, points, scalars)
	forMSMVariants(t, func(t *testing.T) {
		for c := 4; c <= 22; c++ {
			got := gpuMSM(t, d, points, scalars, n, Montgomery, MSMOptions{Window: c})
			if !got.Equal(&want) {
				t.Fatalf("window %d: GPU MSM differs from gnark-crypto", c)
			}
		}
	})
}

func TestMSMEmpty(t *testing.T) {
	d := testDevice(t)
	jac, err := d.MSM(0, 0, 0, Montgomery, MSMOptions{}, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if !jac.Z.IsZero() {
		t.Fatal("empty MSM is not the point at infinity")
	}
}

// TestNTTSplitEnv: the CUZK_NTT_SPLIT values the NTT tests set add up to
// the size and keep its number of groups.
func TestNTTSplitEnv(t *testing.T) {
	for _, c := range []struct {
		logN        int
		split, want string
	}{
		{24, "front", "9,9,6"}, {24, "back", "6,9,9"}, {24, "balanced", "8,8,8"}, {22, "balanced", "8,7,7"},
		{13, "front", "9,4"}, {9, "front", ""}, {24, "", ""},
	} {
		if got := nttSplit(c.logN, c.split); got != c.want {
			t.Errorf("nttSplit(%d, %q) = %q, want %q", c.logN, c.split, got, c.want)
		}
	}
}

// A borrowed pinned buffer copies like its owner's, bounds included, and its
// HostFree leaves the owner's memory alone (the owner frees it once).
func TestBorrowHost(t *testing.T) {
	d := testDevice(t)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	const n = 1 << 16
	own, err := d.HostAlloc(2 * n * 8)
	if err != nil {
		t.Fatal(err)
	}
	words := unsafe.Slice((*uint64)(own.Pointer()), 2*n)
	for i := range words {
		words[i] = mrand.Uint64()
	}
	want := append([]uint64(nil), words[n:]...)
	// Lend the second half, as the keys lend a range of their pinned points.
	lent := BorrowHost(unsafe.Add(own.Pointer(), n*8), n*8)
	buf, err := d.MallocAsync(n*8, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CopyInAsync(buf, lent, 0, n*8, s); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyInAsync(buf, lent, 8, n*8, s); err == nil {
		t.Fatal("async copy past the borrowed buffer accepted")
	}
	out := make([]uint64, n)
	if err := CopyOut(d, out, buf, s); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i] != want[i] {
			t.Fatalf("word %d: %x != %x", i, out[i], want[i])
		}
	}
	if err := d.HostFree(lent); err != nil {
		t.Fatal(err)
	}
	if lent.Pointer() != nil {
		t.Fatal("a freed borrowed buffer still points at its memory")
	}
	// The owner's memory is still there and still its own to free.
	words[n] ^= 1
	if words[n] != want[0]^1 {
		t.Fatal("owner's memory changed under it")
	}
	if err := d.FreeAsync(buf, s); err != nil {
		t.Fatal(err)
	}
	if err := d.StreamSync(s); err != nil {
		t.Fatal(err)
	}
	if err := d.HostFree(own); err != nil {
		t.Fatal(err)
	}
}
