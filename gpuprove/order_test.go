package gpuprove

import (
	"context"
	"slices"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/prover"
)

// The device computes H in natural order (its NTTs are natural in and out);
// with Z permuted by naturalZ, the Z MSM must equal the CPU backend's, which
// pairs gnark's bit-reversed H with gnark's bit-reversed Z. This replays the
// device's data path with gnark-crypto, so it runs without a GPU.
func TestNaturalOrderHWithNaturalZ(t *testing.T) {
	c, err := circuits.Lookup("mimc")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prover.Setup(c, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	w, err := prover.Witness(k, []byte("order"), 0)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := prover.Synthesize(k, w)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prover.Prep(k, sol)
	if err != nil {
		t.Fatal(err)
	}
	d := &k.PK.Domain
	nat := func(v []fr.Element, f func([]fr.Element)) {
		f(v)
		fft.BitReverse(v) // DIF leaves bit-reversed order
	}
	a, b, cc := slices.Clone(p.A), slices.Clone(p.B), slices.Clone(p.C)
	for _, v := range [][]fr.Element{a, b, cc} {
		nat(v, func(x []fr.Element) { d.FFTInverse(x, fft.DIF) })
		nat(v, func(x []fr.Element) { d.FFT(x, fft.DIF, fft.OnCoset()) })
	}
	inv := prover.VanishingInverse(d)
	for i := range a {
		a[i].Mul(&a[i], &b[i]).Sub(&a[i], &cc[i]).Mul(&a[i], &inv)
	}
	nat(a, func(x []fr.Element) { d.FFTInverse(x, fft.DIF, fft.OnCoset()) })

	z, err := naturalZ(k.PK.G1.Z, int(d.Cardinality))
	if err != nil {
		t.Fatal(err)
	}
	var got curve.G1Jac
	if _, err := got.MultiExp(z, a[:len(z)], ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	st, _ := prover.CPU{}.Stage(context.Background(), k, p)
	want, err := prover.CPU{}.Compute(context.Background(), k, st)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&want.Z) {
		t.Fatal("natural-order H against naturalZ differs from the CPU backend's Z sum")
	}
	if _, err := naturalZ(k.PK.G1.Z[:10], int(d.Cardinality)); err == nil {
		t.Fatal("naturalZ accepted a Z of the wrong length")
	}
}
