package cuda

/*
#include "bridge.h"
*/
import "C"

import (
	"errors"
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
	// Only the domain's constants are read here: its host FFT tables would
	// be 128 bytes a point of garbage (16 GiB at 2^27).
	gd := fft.NewDomain(n, fft.WithoutPrecompute())
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

// Scratch is a device buffer a kernel takes its temporaries from: the
// library allocates no device memory of its own during an NTT or an MSM, so
// that whoever keeps the device's ledger counts it.
type Scratch struct {
	Ptr   Ptr
	Bytes int64
}

// DomainBytes is the device memory NewDomain(logN) allocates (its tables,
// and two temporaries while they are computed).
func (d *Device) DomainBytes(logN int) (int64, error) {
	var b C.uint64_t
	if err := d.lib.check("cuzk_ntt_domain_bytes", C.cz_i_pu(d.lib.fn.nttDomainBytes, C.int(logN), &b)); err != nil {
		return 0, fmt.Errorf("ntt domain 2^%d: %w", logN, err)
	}
	return int64(b), nil
}

// NTTScratchBytes is the scratch an NTT of 2^logN elements needs (zero when
// it needs none).
func (d *Device) NTTScratchBytes(logN int) (int64, error) {
	var b C.uint64_t
	if err := d.lib.check("cuzk_ntt_scratch_bytes", C.cz_i_pu(d.lib.fn.nttScratchBytes, C.int(logN), &b)); err != nil {
		return 0, fmt.Errorf("ntt 2^%d: %w", logN, err)
	}
	return int64(b), nil
}

// NTT transforms the N() elements at data (fr.Element layout, Montgomery form)
// in place, natural order in and out, ordered on s. With inverse it
// interpolates (including the 1/n); with coset it evaluates on g*<w>
// (inverse: interpolates from it), matching fft.Domain.FFT/FFTInverse with
// fft.OnCoset(). Its scratch, when it needs any, comes from the
// stream-ordered pool on s; NTTIn takes the caller's.
func (m *Domain) NTT(data Ptr, inverse, coset bool, s Stream) error {
	need, err := m.dev.NTTScratchBytes(m.LogN)
	if err != nil || need == 0 {
		return errors.Join(err, m.NTTIn(data, Scratch{}, inverse, coset, s))
	}
	p, err := m.dev.MallocAsync(need, s)
	if err != nil {
		return fmt.Errorf("ntt 2^%d: scratch: %w", m.LogN, err)
	}
	// Freed in stream order behind the transform.
	return errors.Join(m.NTTIn(data, Scratch{p, need}, inverse, coset, s), m.dev.FreeAsync(p, s))
}

// NTTIn is NTT with the caller's scratch (at least NTTScratchBytes), which
// the transform uses until the stream has run it: the call returns once it
// is queued. A zero Scratch runs it in place, with a bit-reversal pass at
// the end: one more pass over the data, for no scratch vector.
func (m *Domain) NTTIn(data Ptr, scratch Scratch, inverse, coset bool, s Stream) error {
	if m.closed {
		return fmt.Errorf("cuda: NTT on a closed domain")
	}
	rc := C.cz_ntt(m.dev.lib.fn.ntt, m.dev.dev(), m.h, C.uint64_t(data), cbool(inverse), cbool(coset),
		C.uint64_t(scratch.Ptr), C.uint64_t(max(scratch.Bytes, 0)), C.uint64_t(s))
	if err := m.dev.allocErr("cuzk_ntt", rc, 0); err != nil {
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

// GrothMul computes a[i] *= b[i] over the domain's N() elements, ordered on
// s: the first half of GrothH, for a partition that keeps two vectors on the
// device (C's evaluations then take B's place).
func (m *Domain) GrothMul(a, b Ptr, s Stream) error {
	rc := C.cz_i_u_u_u_u(m.dev.lib.fn.groth16Mul, m.dev.dev(), m.h, C.uint64_t(a), C.uint64_t(b), C.uint64_t(s))
	if err := m.dev.lib.check("cuzk_groth16_mul", rc); err != nil {
		return fmt.Errorf("groth16 mul 2^%d: %w", m.LogN, err)
	}
	return nil
}

// GrothSubDiv computes a[i] = (a[i] - c[i]) / (g^n - 1), ordered on s: the
// second half of GrothH.
func (m *Domain) GrothSubDiv(a, c Ptr, s Stream) error {
	rc := C.cz_i_u_u_u_u(m.dev.lib.fn.groth16SubDiv, m.dev.dev(), m.h, C.uint64_t(a), C.uint64_t(c), C.uint64_t(s))
	if err := m.dev.lib.check("cuzk_groth16_sub_div", rc); err != nil {
		return fmt.Errorf("groth16 sub/div 2^%d: %w", m.LogN, err)
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
	// Split classifies the scalars first (after reduction mod r): zero
	// scalars are dropped, the points whose scalar is one are summed with
	// plain additions, and only the other scalars go through Pippenger. The
	// result is the same group element; it pays when most scalars are 0 or 1,
	// as in the witnesses of bit-heavy circuits.
	Split bool
	// Scratch is the device memory the MSM takes its temporaries from, at
	// least MSMScratchBytes for the same points and options. Zero: the call
	// allocates that much from the stream-ordered pool on its stream and
	// frees it before it returns.
	Scratch Scratch
	// Copies > 1: the points are an MSMTable of this many copies of the n
	// points, built for Window (MSMTable.Options sets both).
	Copies int
}

// MSMTable is a precomputed table of fixed MSM bases on the device: Copies
// rows of N points each, row k holding 2^(Window·g·k) times the points (g
// the windows a copy covers; row 0 the points themselves). An MSM over it
// adds into one set of buckets per g windows instead of per window, so it
// spends fewer bucket sums and no doublings between those windows, for
// Copies times the points' memory.
type MSMTable struct {
	Ptr    Ptr // device memory of Bytes bytes, the caller's
	N      int
	G2     bool
	Window int
	Copies int
	Bytes  int64
}

// Options returns o set to MSMs over the table.
func (t MSMTable) Options(o MSMOptions) MSMOptions {
	o.Window, o.Copies = t.Window, t.Copies
	return o
}

// ErrNoTables is returned (wrapped) by the table calls of a kernel library
// built before precomputed tables.
var ErrNoTables = errors.New("cuda: the kernel library has no precomputed MSM tables")

// MSMTableShape is the table of n points on G1 (G2 with g2): its window
// (window 0: the library's choice for tables, else 4..24), copies (copies
// 0: one per window, a single virtual window; else 1..32) and bytes. Ptr is
// left zero for the caller to allocate.
func (d *Device) MSMTableShape(n int, g2 bool, window, copies int) (MSMTable, error) {
	if d.lib.fn.msmTableShape == nil {
		return MSMTable{}, ErrNoTables
	}
	if n <= 0 || uint64(n) >= 1<<31 {
		return MSMTable{}, fmt.Errorf("cuda: MSM table of %d points", n)
	}
	var w, c C.int
	var b C.uint64_t
	rc := C.cz_table_shape(d.lib.fn.msmTableShape, d.dev(), cbool(g2), C.uint64_t(n), C.int(window), C.int(copies), &w, &c, &b)
	if err := d.lib.check("cuzk_msm_table_shape", rc); err != nil {
		return MSMTable{}, fmt.Errorf("msm table of %d points, window %d, %d copies: %w", n, window, copies, err)
	}
	return MSMTable{N: n, G2: g2, Window: int(w), Copies: int(c), Bytes: int64(b)}, nil
}

// BuildMSMTable launches the construction of t (t.Ptr allocated, t from
// MSMTableShape) from its N points on s; points may be t.Ptr, whose first
// row then holds the points already. Asynchronous: the table is ready when
// s reaches this point.
func (d *Device) BuildMSMTable(t MSMTable, points Ptr, s Stream) error {
	fn := d.lib.fn.msmTableG1
	if t.G2 {
		fn = d.lib.fn.msmTableG2
	}
	if fn == nil {
		return ErrNoTables
	}
	if t.Ptr == 0 || points == 0 {
		return fmt.Errorf("cuda: msm table: no device memory")
	}
	rc := C.cz_table(fn, d.dev(), C.uint64_t(points), C.uint64_t(t.N), C.int(t.Window), C.int(t.Copies), C.uint64_t(t.Ptr), C.uint64_t(s))
	return d.lib.check("cuzk_msm_table", rc)
}

// NewMSMTable makes the table of n points (MSMTableShape's window and
// copies) in device memory of its own: fill puts the points in its first
// row (from the host or the device, ordered on s), then the rest is built
// on s, and the call returns once s has run it. On an error the memory is
// freed.
func (d *Device) NewMSMTable(n int, g2 bool, window, copies int, fill func(rows Ptr) error, s Stream) (MSMTable, error) {
	t, err := d.MSMTableShape(n, g2, window, copies)
	if err != nil {
		return t, err
	}
	if t.Ptr, err = d.Malloc(t.Bytes); err != nil {
		return t, fmt.Errorf("msm table of %d copies (%d bytes): %w", t.Copies, t.Bytes, err)
	}
	if err = fill(t.Ptr); err == nil {
		err = d.BuildMSMTable(t, t.Ptr, s)
	}
	if err == nil {
		err = d.StreamSync(s)
	}
	if err != nil {
		// Nothing queued on s may still use the memory when it is freed.
		return MSMTable{}, errors.Join(err, d.StreamSync(s), d.Free(t.Ptr))
	}
	return t, nil
}

// MSMScratchBytes is the scratch an MSM of n points (G2 points with g2)
// needs with these options; with Split, the most over every mix of 0, 1 and
// other scalars.
func (d *Device) MSMScratchBytes(n int, g2 bool, opt MSMOptions) (int64, error) {
	if n < 0 || uint64(n) >= 1<<31 {
		return 0, fmt.Errorf("cuda: MSM of %d points", n)
	}
	var b C.uint64_t
	rc := C.cz_msm_scratch(d.lib.fn.msmScratchBytes, d.dev(), cbool(g2), C.uint64_t(n), C.int(opt.Window), msmFlags(opt), &b)
	if err := d.lib.check("cuzk_msm_scratch_bytes", rc); err != nil {
		return 0, err
	}
	return int64(b), nil
}

// MSMStats counts an MSM's scalars by their value mod r. Without
// MSMOptions.Split they are not classified: Other is n.
type MSMStats struct {
	Zero, One, Other int
}

// MSM computes sum scalars[i] * points[i] for i < n on the device: points
// are n bls12381.G1Affine values (infinity as (0, 0)) and scalars n 32-byte
// values in the given form, both device-resident. It blocks until the result
// is ready; scratch memory comes from the stream-ordered pool on s.
func (d *Device) MSM(points, scalars Ptr, n int, form ScalarForm, opt MSMOptions, s Stream) (bls12381.G1Jac, error) {
	res, _, err := d.MSMWithStats(points, scalars, n, form, opt, s)
	return res, err
}

// MSMWithStats is MSM that also returns how the scalars were classified.
func (d *Device) MSMWithStats(points, scalars Ptr, n int, form ScalarForm, opt MSMOptions, s Stream) (bls12381.G1Jac, MSMStats, error) {
	var res bls12381.G1Jac
	var out [18]C.uint64_t
	st, err := d.msm(d.lib.fn.msmG1Ex, "cuzk_msm_g1_ex", false, points, scalars, n, form, opt, &out[0], s)
	if err != nil {
		return res, st, fmt.Errorf("msm of %d points: %w", n, err)
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
	return res, st, nil
}

// MSMG2 is MSM on G2: points are n bls12381.G2Affine values (192 bytes each,
// infinity as all zero), scalars as for MSM. It computes sum scalars[i] *
// points[i] on the device and blocks until the result is ready.
func (d *Device) MSMG2(points, scalars Ptr, n int, form ScalarForm, opt MSMOptions, s Stream) (bls12381.G2Jac, error) {
	res, _, err := d.MSMG2WithStats(points, scalars, n, form, opt, s)
	return res, err
}

// MSMG2WithStats is MSMG2 that also returns how the scalars were classified.
func (d *Device) MSMG2WithStats(points, scalars Ptr, n int, form ScalarForm, opt MSMOptions, s Stream) (bls12381.G2Jac, MSMStats, error) {
	var res bls12381.G2Jac
	var out [36]C.uint64_t
	st, err := d.msm(d.lib.fn.msmG2Ex, "cuzk_msm_g2_ex", true, points, scalars, n, form, opt, &out[0], s)
	if err != nil {
		return res, st, fmt.Errorf("g2 msm of %d points: %w", n, err)
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
	return res, st, nil
}

// msmSplit and msmCopiesShift are cuzkgpu.h's CUZK_MSM_SPLIT and
// CUZK_MSM_COPIES_SHIFT.
const (
	msmSplit       = 1
	msmCopiesShift = 8
)

func msmFlags(opt MSMOptions) C.int {
	flags := C.int(0)
	if opt.Split {
		flags |= msmSplit
	}
	if opt.Copies > 1 {
		flags |= C.int(opt.Copies) << msmCopiesShift
	}
	return flags
}

// msm calls one of the _ex MSM entry points, whose Jacobian result goes to
// out, with the caller's scratch or, without, scratch from the pool.
func (d *Device) msm(fn unsafe.Pointer, op string, g2 bool, points, scalars Ptr, n int, form ScalarForm, opt MSMOptions,
	out *C.uint64_t, s Stream) (st MSMStats, err error) {
	if n < 0 || uint64(n) >= 1<<31 {
		return MSMStats{}, fmt.Errorf("cuda: MSM of %d points", n)
	}
	scratch := opt.Scratch
	if scratch.Ptr == 0 && n > 0 {
		if scratch.Bytes, err = d.MSMScratchBytes(n, g2, opt); err != nil {
			return MSMStats{}, err
		}
		if scratch.Ptr, err = d.MallocAsync(max(scratch.Bytes, 1), s); err != nil {
			return MSMStats{}, fmt.Errorf("msm scratch: %w", err)
		}
		// The call has synchronized its stream by the time it returns.
		defer func() { err = errors.Join(err, d.FreeAsync(scratch.Ptr, s)) }()
	}
	var counts [3]C.uint64_t
	rc := C.cz_msm_ex(fn, d.dev(), C.uint64_t(points), C.uint64_t(scalars), C.uint64_t(n), cbool(form == Montgomery),
		C.int(opt.Window), msmFlags(opt), C.uint64_t(scratch.Ptr), C.uint64_t(max(scratch.Bytes, 0)), out, &counts[0], C.uint64_t(s))
	if err := d.allocErr(op, rc, 0); err != nil {
		return MSMStats{}, err
	}
	st = MSMStats{Zero: int(counts[0]), One: int(counts[1]), Other: int(counts[2])}
	if st.Zero+st.One+st.Other != n {
		return st, fmt.Errorf("cuda: %s classified %d+%d+%d scalars of %d", op, st.Zero, st.One, st.Other, n)
	}
	return st, nil
}

// Log2 returns log2(n) for a power of two n, or -1.
func Log2(n int) int {
	if n <= 0 || n&(n-1) != 0 {
		return -1
	}
	return bits.TrailingZeros(uint(n))
}
