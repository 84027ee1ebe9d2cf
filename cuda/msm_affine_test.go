package cuda

import (
	"strconv"
	"testing"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// TestBuildInfoOfStandIn reads the build switches through the bridge's
// optional symbol, from the stand-in library (no GPU needed).
func TestBuildInfoOfStandIn(t *testing.T) {
	path, err := BuildStandIn(t.TempDir())
	if err != nil {
		t.Skipf("no C compiler for the stand-in library: %v", err)
	}
	l, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.BuildSwitch("msm_accumulate"); got != "none" {
		t.Fatalf("stand-in msm_accumulate = %q (build info %q), want none", got, l.BuildInfo())
	}
	if got := l.BuildSwitch("no_such_switch"); got != "" {
		t.Fatalf("an absent switch reads %q", got)
	}
}

// affineDevice is the test device when its library accumulates in affine
// coordinates (built with CUZK_MSM_AFFINE=1); the test skips otherwise.
func affineDevice(t *testing.T) *Device {
	t.Helper()
	d := testDevice(t)
	if a := d.Lib().BuildSwitch("msm_accumulate"); a != "affine" {
		t.Skipf("library %s accumulates with %q (build info %q), not affine", d.Lib().Path(), a, d.Lib().BuildInfo())
	}
	return d
}

// TestMSMAffineKnobs runs the affine accumulation of a CUZK_MSM_AFFINE=1
// library through its knobs, on G1 and G2, against gnark-crypto: chunks of 1
// to 1024 entries (runs cut anywhere), rounds down to single pairs or none
// at all (the XYZZ tail alone), one to a few resident threads (lists reused
// over many chunks), on the edge cases of TestMSMEdgeCases that reach the
// pairs outside the batch (infinity, doublings, cancellations) and on random
// inputs. Every other MSM test of the package runs it too with the defaults.
func TestMSMAffineKnobs(t *testing.T) {
	d := affineDevice(t)
	const n = 3000
	base := randomPoints(n)
	inputs := map[string]func() ([]bls12381.G1Affine, []fr.Element){
		"random": func() ([]bls12381.G1Affine, []fr.Element) { return base, randomFr(n) },
		"repeated points, equal scalars": func() ([]bls12381.G1Affine, []fr.Element) {
			p := make([]bls12381.G1Affine, n)
			s := make([]fr.Element, n)
			var x fr.Element
			x.MustSetRandom()
			for i := range p {
				p[i], s[i] = base[i%5], x
			}
			return p, s
		},
		"cancelling pairs and infinity": func() ([]bls12381.G1Affine, []fr.Element) {
			p := append([]bls12381.G1Affine(nil), base...)
			s := randomFr(n)
			for i := 0; i+1 < n; i += 3 {
				p[i+1].Neg(&p[i])
				s[i+1] = s[i]
				p[i+2].SetInfinity()
			}
			return p, s
		},
	}
	knobs := []map[string]int{
		{"CUZK_MSM_AFFINE_CHUNK": 1},
		{"CUZK_MSM_AFFINE_CHUNK": 2, "CUZK_MSM_AFFINE_MIN_PAIRS": 1},
		{"CUZK_MSM_AFFINE_CHUNK": 7, "CUZK_MSM_AFFINE_MIN_PAIRS": 1, "CUZK_MSM_AFFINE_THREADS": 3},
		{"CUZK_MSM_AFFINE_CHUNK": 64, "CUZK_MSM_AFFINE_MIN_PAIRS": 2},
		{"CUZK_MSM_AFFINE_CHUNK": 256, "CUZK_MSM_AFFINE_MIN_PAIRS": 1, "CUZK_MSM_AFFINE_THREADS": 1},
		{"CUZK_MSM_AFFINE_CHUNK": 256, "CUZK_MSM_AFFINE_MIN_PAIRS": 1 << 20},
		{"CUZK_MSM_AFFINE_CHUNK": 1024, "CUZK_MSM_AFFINE_MIN_PAIRS": 1},
	}
	for _, k := range knobs {
		name := ""
		for env, v := range k {
			t.Setenv(env, strconv.Itoa(v))
			name += env[len("CUZK_MSM_AFFINE_"):] + "=" + strconv.Itoa(v) + " "
		}
		for what, mk := range inputs {
			points, scalars := mk()
			want := cpuMSM(t, points, scalars)
			for _, opt := range []MSMOptions{{}, {Window: 13}, {Split: true}} {
				if got := gpuMSM(t, d, points, scalars, n, Montgomery, opt); !got.Equal(&want) {
					t.Fatalf("%s%s %+v: GPU MSM differs from gnark-crypto", name, what, opt)
				}
			}
		}
		pointsG2 := randomPointsG2(500)
		scalarsG2 := randomFr(500)
		wantG2 := cpuMSMG2(t, pointsG2, scalarsG2)
		if got := gpuMSMG2(t, d, pointsG2, scalarsG2, 500, Montgomery, MSMOptions{Window: 6}); !got.Equal(&wantG2) {
			t.Fatalf("%sG2: GPU MSM differs from gnark-crypto", name)
		}
		for env := range k {
			t.Setenv(env, "")
		}
	}
}
