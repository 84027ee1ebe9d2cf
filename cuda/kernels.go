package cuda

/*
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"math/big"
	"math/bits"
	"unsafe"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
)

// MaxLogNTT is the largest NTT size the library supports, as log2.
const MaxLogNTT = 27

// Domain holds the device tables of one NTT size, with gnark-crypto's
// fft.Domain constants for that size (root of unity, coset shift
// FrMultiplicativeGen), so that results equal gnark-crypto's FFT.
type Domain struct {
	dev    *Device
	h      C.uint64_t
	LogN   int
	Coset  fr.Element // the coset shift g
	ZInv   fr.Element // 1 / (g^n - 1)
	closed bool
}

// NewDomain builds the tables for size 2^logN on the device, ordered on s
// (it waits for them).
func (d *Device) NewDomain(logN int, s Stream) (*Domain, error) {
	if logN < 0 || logN > MaxLogNTT {
		return nil, fmt.Errorf("cuda: NTT size 2^%d outside [2^0, 2^%d]", logN, MaxLogNTT)
	}
	n := uint64(1) << logN
	gd := fft.NewDomain(n)
	var zInv fr.Element
	zInv.Exp(gd.FrMultiplicativeGen, new(big.Int).SetUint64(n))
	var one fr.Element
	one.SetOne()
	zInv.Sub(&zInv, &one).Inverse(&zInv)

	var h C.uint64_t
	rc := C.cz_domain(d.lib.fn.nttDomainCreate, d.dev(), &h, C.int(logN),
		limbs(&gd.Generator), limbs(&gd.GeneratorInv), limbs(&gd.CardinalityInv),
		limbs(&gd.FrMultiplicativeGen), limbs(&gd.FrMultiplicativeGenInv), limbs(&zInv), C.uint64_t(s))
	if err := d.allocErr("cuzk_ntt_domain_create", rc, int64(n)*fr.Bytes); err != nil {
		return nil, fmt.Errorf("ntt domain 2^%d: %w", logN, err)
	}
	return &Domain{dev: d, h: h, LogN: logN, Coset: gd.FrMultiplicativeGen, ZInv: zInv}, nil
}

func limbs(e *fr.Element) *C.uint64_t { return (*C.uint64_t)(unsafe.Pointer(&e[0])) }

// N is the transform size.
func (m *Domain) N() int { return 1 << m.LogN }

// Close frees the domain's device tables.
func (m *Domain) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	return m.dev.lib.check("cuzk_ntt_domain_destroy", C.cz_i_u(m.dev.lib.fn.nttDomainDestroy, m.dev.dev(), m.h))
}

// NTT transforms the N() elements at data (fr.Element layout, Montgomery form)
// in place, natural order in and out, ordered on s. With inverse it
// interpolates (including the 1/n); with coset it evaluates on g*<w>
// (inverse: interpolates from it), matching fft.Domain.FFT/FFTInverse with
// fft.OnCoset().
func (m *Domain) NTT(data Ptr, inverse, coset bool, s Stream) error {
	if m.closed {
		return fmt.Errorf("cuda: NTT on a closed domain")
	}
	rc := C.cz_ntt(m.dev.lib.fn.ntt, m.dev.dev(), m.h, C.uint64_t(data), cbool(inverse), cbool(coset), C.uint64_t(s))
	if err := m.dev.lib.check("cuzk_ntt", rc); err != nil {
		return fmt.Errorf("ntt 2^%d: %w", m.LogN, err)
	}
	return nil
}

// GrothH computes a[i] = (a[i]*b[i] - c[i]) / (g^n - 1) over the domain's
// N() coset evaluations, in place in a, ordered on s.
func (m *Domain) GrothH(a, b, c Ptr, s Stream) error {
	rc := C.cz_h(m.dev.lib.fn.groth16H, m.dev.dev(), m.h, C.uint64_t(a), C.uint64_t(b), C.uint64_t(c), C.uint64_t(s))
	if err := m.dev.lib.check("cuzk_groth16_h", rc); err != nil {
		return fmt.Errorf("groth16 h 2^%d: %w", m.LogN, err)
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// ScalarForm says how MSM scalars are stored on the device.
type ScalarForm int

const (
	// Montgomery scalars are fr.Element values as gnark-crypto keeps them.
	Montgomery ScalarForm = iota
	// Canonical scalars are little-endian 256-bit integers (fr.Element.Bits
	// order); values at or above r are reduced.
	Canonical
)

// MSMOptions tunes an MSM; the zero value picks everything by size.
type MSMOptions struct {
	Window int // window size in bits, 4..24; 0 chooses by size
}

// MSM computes sum scalars[i] * points[i] for i < n on the device: points
// are n bls12381.G1Affine values (infinity as (0, 0)) and scalars n 32-byte
// values in the given form, both device-resident. It blocks until the result
// is ready; scratch memory comes from the stream-ordered pool on s.
func (d *Device) MSM(points, scalars Ptr, n int, form ScalarForm, opt MSMOptions, s Stream) (bls12381.G1Jac, error) {
	var res bls12381.G1Jac
	if n < 0 || uint64(n) >= 1<<31 {
		return res, fmt.Errorf("cuda: MSM of %d points", n)
	}
	var out [18]C.uint64_t
	mont := cbool(form == Montgomery)
	rc := C.cz_msm(d.lib.fn.msmG1, d.dev(), C.uint64_t(points), C.uint64_t(scalars), C.uint64_t(n), mont,
		C.int(opt.Window), &out[0], C.uint64_t(s))
	if err := d.allocErr("cuzk_msm_g1", rc, 0); err != nil {
		return res, fmt.Errorf("msm of %d points: %w", n, err)
	}
	for i := 0; i < 6; i++ {
		res.X[i] = uint64(out[i])
		res.Y[i] = uint64(out[6+i])
		res.Z[i] = uint64(out[12+i])
	}
	if res.Z.IsZero() {
		res.X.SetOne()
		res.Y.SetOne()
	}
	return res, nil
}

// MSMG2 is MSM on G2: points are n bls12381.G2Affine values (192 bytes each,
// infinity as all zero), scalars as for MSM. It computes sum scalars[i] *
// points[i] on the device and blocks until the result is ready.
func (d *Device) MSMG2(points, scalars Ptr, n int, form ScalarForm, opt MSMOptions, s Stream) (bls12381.G2Jac, error) {
	var res bls12381.G2Jac
	if n < 0 || uint64(n) >= 1<<31 {
		return res, fmt.Errorf("cuda: G2 MSM of %d points", n)
	}
	var out [36]C.uint64_t
	mont := cbool(form == Montgomery)
	rc := C.cz_msm(d.lib.fn.msmG2, d.dev(), C.uint64_t(points), C.uint64_t(scalars), C.uint64_t(n), mont,
		C.int(opt.Window), &out[0], C.uint64_t(s))
	if err := d.allocErr("cuzk_msm_g2", rc, 0); err != nil {
		return res, fmt.Errorf("g2 msm of %d points: %w", n, err)
	}
	for i := 0; i < 6; i++ {
		res.X.A0[i] = uint64(out[i])
		res.X.A1[i] = uint64(out[6+i])
		res.Y.A0[i] = uint64(out[12+i])
		res.Y.A1[i] = uint64(out[18+i])
		res.Z.A0[i] = uint64(out[24+i])
		res.Z.A1[i] = uint64(out[30+i])
	}
	if res.Z.IsZero() {
		res.X.SetOne()
		res.Y.SetOne()
	}
	return res, nil
}

// Log2 returns log2(n) for a power of two n, or -1.
func Log2(n int) int {
	if n <= 0 || n&(n-1) != 0 {
		return -1
	}
	return bits.TrailingZeros(uint(n))
}
