package prover

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime/debug"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
)

// What a process that makes its keys in memory (SetupInMemory) can give up
// once they are made, so that a PoRep-sized key set leaves the host room for
// partitions: at 2^26 the R1CS's instructions are about 9 GiB, and points
// streamed from pinned memory are otherwise held twice, in the Go heap and in
// their pinned copy (28 GiB each).

// ErrSystemReleased is the error of what needs the constraint system's
// instructions after ReleaseSystem: gnark's solver and prover, Save.
var ErrSystemReleased = errors.New("the constraint system's instructions were released (cuzk's solver has its own program)")

// ReleaseSystem drops the bulk of the constraint system, its instructions,
// their call data and their levels, once cuzk's solver has laid out its own
// program (it waits for the layout): the counts, the commitments' and
// hints' descriptions and the coefficients stay. Witnesses are then solved
// by cuzk's solver only; gnark's solver and prover and Save return
// ErrSystemReleased. It refuses keys that need gnark's solver.
func (k *Keys) ReleaseSystem() error {
	if k.solver() == nil {
		return fmt.Errorf("keys of %s: %s's solver needs the constraint system: it cannot be released", k.Circuit, k.SolverName())
	}
	if k.released.Load() {
		return nil
	}
	k.CS.Instructions, k.CS.CallData, k.CS.Levels = nil, nil, nil
	k.released.Store(true)
	debug.FreeOSMemory()
	return nil
}

// DropDomainTables replaces the proving key's FFT domain with the same
// domain without its precomputed tables (twiddles and coset tables: 128
// bytes a constraint, 16 GiB at 2^27), for keys whose FFTs run on a GPU,
// which makes its own on the device. A CPU FFT over these keys computes the
// twiddles as it goes (gnark-crypto's fft.WithoutPrecompute): slower, the
// same results. Call it before the keys are used by more than one
// goroutine.
func (k *Keys) DropDomainTables() {
	d := &k.PK.Domain
	if _, err := d.Twiddles(); err != nil {
		return // none
	}
	k.PK.Domain = *fft.NewDomain(d.Cardinality, fft.WithShift(d.FrMultiplicativeGen), fft.WithoutPrecompute())
	debug.FreeOSMemory()
}

// SystemReleased says whether ReleaseSystem dropped the system's
// instructions.
func (k *Keys) SystemReleased() bool { return k.released.Load() }

// HostAlloc allocates bytes of pinned host memory that stays valid for the
// process (cuda.Device.HostAlloc, never freed).
type HostAlloc func(bytes int64) (unsafe.Pointer, error)

// PinPoints moves the proving key's A, B and K points and its G2 B points
// into memory from alloc (pinned host memory): each set is copied and its
// Go slice replaced by one over the new memory, so the Go heap's copy is
// collected before the next set is allocated (the peak is the keys and one
// set). Keys whose system was released (ReleaseSystem: gnark's prover and
// Save refuse them, so nothing reads Z in gnark's order) have Z moved too,
// in the device's order (ZInDeviceOrder): the GPU backend streams it from
// there as well instead of reordering it into a copy of its own, and the
// CPU backend reorders H to match. Otherwise Z stays in the Go heap and the
// GPU backend reorders it into a copy. The keys work as before; a GPU
// backend streams the moved sets from where they are instead of copying
// them again (PointsPinned). The memory is never freed: for keys that live
// as long as the process, as SetupInMemory's do in bench prove.
func (k *Keys) PinPoints(alloc HostAlloc) error {
	if !k.PointsInMemory() {
		return fmt.Errorf("keys of %s: points on disk cannot be pinned in memory", k.Circuit)
	}
	if k.pinned.Load() {
		return nil
	}
	var err error
	for _, s := range []*[]curve.G1Affine{&k.PK.G1.A, &k.PK.G1.B, &k.PK.G1.K} {
		if *s, err = moveTo(alloc, *s); err != nil {
			return fmt.Errorf("keys of %s: pin points: %w", k.Circuit, err)
		}
		debug.FreeOSMemory()
	}
	if k.PK.G2.B, err = moveTo(alloc, k.PK.G2.B); err != nil {
		return fmt.Errorf("keys of %s: pin G2 points: %w", k.Circuit, err)
	}
	debug.FreeOSMemory()
	if k.SystemReleased() {
		z, err := moveInDeviceOrder(alloc, k.PK.G1.Z, int(k.PK.Domain.Cardinality))
		if err != nil {
			return fmt.Errorf("keys of %s: pin Z: %w", k.Circuit, err)
		}
		k.PK.G1.Z = z
		k.zDevice.Store(true)
		debug.FreeOSMemory()
	}
	k.pinned.Store(true)
	return nil
}

// PointsPinned says whether PinPoints moved the A, B, K and G2 B points
// into pinned memory.
func (k *Keys) PointsPinned() bool { return k.pinned.Load() }

// ZInDeviceOrder says whether PinPoints moved Z into pinned memory in the
// order the device's H comes out in (ZDeviceIndex): PK.G1.Z[ZDeviceIndex(j,
// n)] is gnark's Z[j].
func (k *Keys) ZInDeviceOrder() bool { return k.zDevice.Load() }

// ZDeviceIndex is where gnark's Z[j] lies in the device's order for a
// domain of n points (a power of two): j's bits reversed. j < n−1, and so
// is the index (only n−1 reverses to n−1).
func ZDeviceIndex(j, n int) int {
	return int(bits.Reverse64(uint64(j)) >> (64 - bits.TrailingZeros64(uint64(n))))
}

// moveInDeviceOrder copies z into memory from alloc with every point at its
// device index (ZDeviceIndex) and returns the slice over it.
func moveInDeviceOrder(alloc HostAlloc, z []curve.G1Affine, n int) ([]curve.G1Affine, error) {
	if n < 2 || n&(n-1) != 0 || len(z) != n-1 {
		return z, fmt.Errorf("%d Z points for a domain of %d: want n−1, n a power of two", len(z), n)
	}
	p, err := alloc(int64(len(z)) * int64(unsafe.Sizeof(z[0])))
	if err != nil {
		return z, err
	}
	out := unsafe.Slice((*curve.G1Affine)(p), len(z))
	ToDeviceOrder(out, z, n)
	return out, nil
}

// ToDeviceOrder writes src, in gnark's order (Z's points, or H's
// coefficients for them), into dst in the device's: src[j] at
// ZDeviceIndex(j, n). dst is at least as long as src.
func ToDeviceOrder[T any](dst, src []T, n int) {
	for j := range src {
		dst[ZDeviceIndex(j, n)] = src[j]
	}
}

// moveTo copies s into memory from alloc and returns the slice over it.
func moveTo[T any](alloc HostAlloc, s []T) ([]T, error) {
	if len(s) == 0 {
		return s, nil
	}
	var zero T
	p, err := alloc(int64(len(s)) * int64(unsafe.Sizeof(zero)))
	if err != nil {
		return s, err
	}
	out := unsafe.Slice((*T)(p), len(s))
	copy(out, s)
	return out, nil
}
