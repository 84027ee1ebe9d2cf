package gpuprove

import (
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/keygen"
)

var _ keygen.Multiplier = Multiplier{}

// Multiplier is key generation's keygen.Multiplier on a CUDA device: it
// multiplies with the fixed-base kernel
// (cuda.Device.FixedBaseG1/G2): the host builds the base's window table and
// converts the results to affine form, the device does the additions.
type Multiplier struct {
	Device  *cuda.Device
	Stream  cuda.Stream           // zero: the legacy default stream
	Options cuda.FixedBaseOptions // zero: window and batch chosen by size
}

// G1 implements keygen.Multiplier.
func (m Multiplier) G1(base curve.G1Affine, scalars []fr.Element) ([]curve.G1Affine, error) {
	return m.Device.FixedBaseG1(base, scalars, m.Options, m.Stream)
}

// G2 implements keygen.Multiplier.
func (m Multiplier) G2(base curve.G2Affine, scalars []fr.Element) ([]curve.G2Affine, error) {
	return m.Device.FixedBaseG2(base, scalars, m.Options, m.Stream)
}

// OpenMultiplier loads the kernel library (lib; empty follows cuda.Load's
// search order) and returns a Multiplier on a new stream of GPU 0, and a
// function that releases the stream. A missing library, driver or GPU gives
// an error matching cuda.ErrUnavailable.
func OpenMultiplier(lib string) (Multiplier, func(), error) {
	l, err := cuda.Load(lib)
	if err != nil {
		return Multiplier{}, nil, err
	}
	dev, err := l.Device(0)
	if err != nil {
		return Multiplier{}, nil, err
	}
	s, err := dev.NewStream()
	if err != nil {
		return Multiplier{}, nil, err
	}
	return Multiplier{Device: dev, Stream: s}, func() { _ = dev.DestroyStream(s) }, nil
}
