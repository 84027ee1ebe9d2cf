package keygen

import (
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/cuda"
)

// GPUMultiplier multiplies on a CUDA device with the fixed-base kernel
// (cuda.Device.FixedBaseG1/G2): the host builds the base's window table and
// converts the results to affine form, the device does the additions.
type GPUMultiplier struct {
	Device  *cuda.Device
	Stream  cuda.Stream           // zero: the legacy default stream
	Options cuda.FixedBaseOptions // zero: window and batch chosen by size
}

// G1 implements Multiplier.
func (m GPUMultiplier) G1(base curve.G1Affine, scalars []fr.Element) ([]curve.G1Affine, error) {
	return m.Device.FixedBaseG1(base, scalars, m.Options, m.Stream)
}

// G2 implements Multiplier.
func (m GPUMultiplier) G2(base curve.G2Affine, scalars []fr.Element) ([]curve.G2Affine, error) {
	return m.Device.FixedBaseG2(base, scalars, m.Options, m.Stream)
}
