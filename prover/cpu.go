package prover

import (
	"context"
	"fmt"
	"math/big"
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/cuzk/cuzk/internal/par"
)

// CPU is the backend that computes on the host with gnark-crypto.
type CPU struct{}

// Name implements Backend.
func (CPU) Name() string { return "cpu" }

// ConsumesPrepared implements PreparedConsumer: Compute transforms a, b and
// c of the Prepared in place.
func (CPU) ConsumesPrepared() bool { return true }

type cpuStaged struct{ p *Prepared }

func (cpuStaged) Release() {}

// Stage implements Backend: on the CPU the data is already where Compute reads it.
func (CPU) Stage(ctx context.Context, k *Keys, p *Prepared) (Staged, error) {
	return cpuStaged{p}, ctx.Err()
}

// Compute implements Backend.
func (CPU) Compute(ctx context.Context, k *Keys, s Staged) (*Computed, error) {
	cs, ok := s.(cpuStaged)
	if !ok {
		return nil, fmt.Errorf("cpu backend: staged data of type %T", s)
	}
	p := cs.p
	pk := k.PK
	if !k.PointsInMemory() {
		return nil, fmt.Errorf("cpu backend: the keys of %s were loaded without their points (they are in %s): the CPU's MSMs need them in memory", k.Circuit, k.Points.Path)
	}
	var out Computed
	// The three MSMs that do not need H start with it; Z waits for H.
	// Four MSMs share the cores, as in gnark's prover.
	tasks := max(1, runtime.NumCPU()/2)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	msm := func(i int, dst *curve.G1Jac, points []curve.G1Affine, scalars []fr.Element) {
		defer wg.Done()
		if _, err := dst.MultiExp(points, scalars, ecc.MultiExpConfig{NbTasks: tasks}); err != nil {
			errs[i] = err
		}
	}
	h := ComputeH(p.A, p.B, p.C, &pk.Domain)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wg.Add(4)
	go msm(0, &out.A, pk.G1.A, p.WiresA)
	go msm(1, &out.B1, pk.G1.B, p.WiresB)
	go msm(2, &out.K, pk.G1.K, p.WiresK)
	// deg H = n−2, so its last coefficient is zero and Z has n−1 points.
	hz := h[:len(pk.G1.Z)]
	if k.ZInDeviceOrder() {
		// Z lies in the device's order: H's coefficients follow it.
		hz = make([]fr.Element, len(pk.G1.Z))
		ToDeviceOrder(hz, h[:len(hz)], int(pk.Domain.Cardinality))
	}
	go msm(3, &out.Z, pk.G1.Z, hz)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("msm %s: %w", [...]string{"A", "B1", "K", "Z"}[i], err)
		}
	}
	return &out, nil
}

// ComputeH returns the coefficients of H = (A·B − C)/Z, where A, B and C hold
// evaluations on the domain and Z = Xⁿ − 1: three inverse NTTs, three NTTs on
// the coset, the pointwise step, and an inverse NTT on the coset. It works in
// place in a and clobbers b and c.
func ComputeH(a, b, c []fr.Element, d *fft.Domain) []fr.Element {
	d.FFTInverse(a, fft.DIF)
	d.FFTInverse(b, fft.DIF)
	d.FFTInverse(c, fft.DIF)
	d.FFT(a, fft.DIT, fft.OnCoset())
	d.FFT(b, fft.DIT, fft.OnCoset())
	d.FFT(c, fft.DIT, fft.OnCoset())
	inv := VanishingInverse(d)
	par.Range(len(a), 1024, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i].Mul(&a[i], &b[i]).Sub(&a[i], &c[i]).Mul(&a[i], &inv)
		}
	})
	d.FFTInverse(a, fft.DIF, fft.OnCoset())
	return a
}

// VanishingInverse is 1/Z(g·ωⁱ) = 1/(gⁿ − 1), the same at every point of the coset.
func VanishingInverse(d *fft.Domain) fr.Element {
	var den, one fr.Element
	one.SetOne()
	den.Exp(d.FrMultiplicativeGen, new(big.Int).SetUint64(d.Cardinality))
	den.Sub(&den, &one).Inverse(&den)
	return den
}
