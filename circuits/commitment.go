package circuits

import (
	"crypto/sha256"
	"fmt"
	"math/big"

	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/hash/sha2"
	"github.com/consensys/gnark/std/lookup/logderivlookup"
	"github.com/consensys/gnark/std/math/emulated"
	"github.com/consensys/gnark/std/math/emulated/emparams"
	"github.com/consensys/gnark/std/math/uints"
	"github.com/consensys/gnark/std/rangecheck"
)

// The circuits below are small ones over gnark's std gadgets, each of which
// makes gnark commit (api.Commit) in an R1CS: range checks and lookups are
// log-derivative arguments whose challenge is a commitment to the values.
// They are not example circuits (Lookup does not find them); tests prove
// them to check that cuzk proves what gnark proves, and
// docs/gnark-circuits.md lists them.

// WithCommitment is a tiny circuit (X² = Y, Y public) that calls api.Commit
// itself and uses the commitment.
type WithCommitment struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *WithCommitment) Define(api frontend.API) error {
	cm, err := api.(frontend.Committer).Commit(c.X)
	if err != nil {
		return err
	}
	api.AssertIsDifferent(cm, 0)
	api.AssertIsEqual(api.Mul(c.X, c.X), c.Y)
	return nil
}

// TwoCommitments calls api.Commit twice (X alone, then Y with the public Z):
// two commitments, whose proofs of knowledge a proof folds into one.
type TwoCommitments struct {
	X, Y frontend.Variable
	Z    frontend.Variable `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *TwoCommitments) Define(api frontend.API) error {
	cm := api.(frontend.Committer)
	a, err := cm.Commit(c.X)
	if err != nil {
		return err
	}
	b, err := cm.Commit(c.Y, c.Z)
	if err != nil {
		return err
	}
	api.AssertIsDifferent(a, b)
	api.AssertIsEqual(api.Mul(c.X, c.Y), c.Z)
	return nil
}

// RangeCheckBits is the width RangeCheck checks its values to.
const RangeCheckBits = 20

// RangeCheck checks with std/rangecheck that each value fits in
// RangeCheckBits bits, and that they add up to the public Sum.
type RangeCheck struct {
	Values [32]frontend.Variable
	Sum    frontend.Variable `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *RangeCheck) Define(api frontend.API) error {
	rc := rangecheck.New(api)
	sum := frontend.Variable(0)
	for _, v := range c.Values {
		rc.Check(v, RangeCheckBits)
		sum = api.Add(sum, v)
	}
	api.AssertIsEqual(sum, c.Sum)
	return nil
}

// NewRangeCheck is an assignment of RangeCheck: value i is seed·(i+1)
// reduced below 2^RangeCheckBits.
func NewRangeCheck(seed uint64) *RangeCheck {
	a := &RangeCheck{}
	var sum uint64
	for i := range a.Values {
		v := (seed * uint64(i+1)) % (1 << RangeCheckBits)
		a.Values[i] = v
		sum += v
	}
	a.Sum = sum
	return a
}

// TableLookup looks up private indices in a private table with
// std/lookup/logderivlookup; the results are public.
type TableLookup struct {
	Table   [16]frontend.Variable
	Indices [8]frontend.Variable
	Results [8]frontend.Variable `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *TableLookup) Define(api frontend.API) error {
	t := logderivlookup.New(api)
	for _, v := range c.Table {
		t.Insert(v)
	}
	got := t.Lookup(c.Indices[:]...)
	for i := range got {
		api.AssertIsEqual(got[i], c.Results[i])
	}
	return nil
}

// NewTableLookup is an assignment of TableLookup: table entry j is
// seed + j², index i is (3i + seed) mod 16.
func NewTableLookup(seed uint64) *TableLookup {
	a := &TableLookup{}
	table := make([]uint64, len(a.Table))
	for j := range table {
		table[j] = seed + uint64(j*j)
		a.Table[j] = table[j]
	}
	for i := range a.Indices {
		idx := (3*uint64(i) + seed) % uint64(len(table))
		a.Indices[i], a.Results[i] = idx, table[idx]
	}
	return a
}

// SHA256Len is the length of SHA256's message.
const SHA256Len = 8

// SHA256 hashes a private message with std/hash/sha2 (bytes as uints.U8,
// checked by lookups) into a public digest.
type SHA256 struct {
	Message [SHA256Len]uints.U8
	Digest  [32]uints.U8 `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *SHA256) Define(api frontend.API) error {
	h, err := sha2.New(api)
	if err != nil {
		return err
	}
	u, err := uints.NewBytes(api)
	if err != nil {
		return err
	}
	h.Write(c.Message[:])
	sum := h.Sum()
	if len(sum) != len(c.Digest) {
		return fmt.Errorf("sha2 gave %d bytes", len(sum))
	}
	for i := range sum {
		u.AssertIsEqual(sum[i], c.Digest[i])
	}
	return nil
}

// NewSHA256 is an assignment of SHA256 for msg (SHA256Len bytes).
func NewSHA256(msg [SHA256Len]byte) *SHA256 {
	a := &SHA256{}
	d := sha256.Sum256(msg[:])
	copy(a.Message[:], uints.NewU8Array(msg[:]))
	copy(a.Digest[:], uints.NewU8Array(d[:]))
	return a
}

// EmulatedMul multiplies two elements of secp256k1's base field, emulated
// with std/math/emulated (limbs range-checked by a commitment): A·B = C, C
// public.
type EmulatedMul struct {
	A, B emulated.Element[emparams.Secp256k1Fp]
	C    emulated.Element[emparams.Secp256k1Fp] `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *EmulatedMul) Define(api frontend.API) error {
	f, err := emulated.NewField[emparams.Secp256k1Fp](api)
	if err != nil {
		return err
	}
	f.AssertIsEqual(f.Mul(&c.A, &c.B), &c.C)
	return nil
}

// NewEmulatedMul is an assignment of EmulatedMul: a·b mod secp256k1's p.
func NewEmulatedMul(a, b *big.Int) *EmulatedMul {
	p := emparams.Secp256k1Fp{}.Modulus()
	c := new(big.Int).Mul(a, b)
	c.Mod(c, p)
	return &EmulatedMul{
		A: emulated.ValueOf[emparams.Secp256k1Fp](a),
		B: emulated.ValueOf[emparams.Secp256k1Fp](b),
		C: emulated.ValueOf[emparams.Secp256k1Fp](c),
	}
}
