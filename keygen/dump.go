package keygen

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/pedersen"
	gunsafe "github.com/consensys/gnark-crypto/utils/unsafe"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// DumpOptions tune SetupDump.
type DumpOptions struct {
	// Chunk is the most scalars given to the Multiplier in one call, so the
	// most points of the proving key held at once. Default 1<<22: 0.4 GB of
	// G1 points, 0.8 GB of G2 points. Smaller chunks cost the GPU a window
	// table per call and a smaller window.
	Chunk int
	// NoDomainTables writes the proving key's domain without its FFT
	// tables, so that who reads it back (ProvingKey.ReadDump) does not make
	// them: 128 bytes a constraint, 16 GiB at 2^27. A CPU prover with such
	// a key computes the twiddles in each FFT instead (gnark-crypto's
	// fft.WithoutPrecompute); a GPU backend has its own tables on the
	// device. The default writes gnark's key, tables flagged.
	NoDomainTables bool
	// Evaluated, when not nil, is called once the system's A, B and C are
	// evaluated: SetupDump reads nothing of it after, so that a caller may
	// release what only the evaluation needed during the multiplications.
	Evaluated func()
}

// DefaultDumpChunk is DumpOptions.Chunk's default.
const DefaultDumpChunk = 1 << 22

// KeyShape is what a caller of SetupDump may want to know of the proving
// key it wrote without reading it back.
type KeyShape struct {
	Wires  int    // len(ProvingKey.InfinityA)
	Domain uint64 // the domain's cardinality
}

// SetupDump makes the keys Setup makes — for the same rnd, the same bytes —
// but writes the proving key to w as it is made, in the encoding of
// groth16bls.ProvingKey.WriteDump, and returns only the verifying key. It
// never holds the proving key: at most Chunk of its points, besides the
// scalars still to multiply, each section's scalars dropped once its points
// are written. Nothing of r1cs is used once its A, B, C are evaluated, so a
// caller that drops its own reference lets it go before the
// multiplications. A nil mul is CPUMultiplier, a nil rnd crypto/rand.
func SetupDump(r1cs *cs.R1CS, mul Multiplier, rnd io.Reader, w io.Writer, opt DumpOptions) (*groth16bls.VerifyingKey, KeyShape, error) {
	if mul == nil {
		mul = CPUMultiplier{}
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	chunk := opt.Chunk
	if chunk <= 0 {
		chunk = DefaultDumpChunk
	}
	sc, st, err := prepare(r1cs, rnd)
	r1cs = nil
	if err != nil {
		return nil, KeyShape{}, err
	}
	if opt.Evaluated != nil {
		opt.Evaluated()
	}
	shape := KeyShape{Wires: len(sc.infA), Domain: sc.domain.Cardinality}
	// The evaluation's terms and Lagrange values are garbage, and the R1CS
	// too if the caller let it go: give their pages back before the points.
	debug.FreeOSMemory()

	pk := sc.provingKeyHeader()
	vk := &groth16bls.VerifyingKey{}
	if err := sc.fixedPoints(mul, pk, vk); err != nil {
		return nil, shape, err
	}
	if err := writeDumpHeader(w, pk, len(sc.basisK), !opt.NoDomainTables); err != nil {
		return nil, shape, fmt.Errorf("keygen: write proving key: %w", err)
	}
	sc.infA, sc.infB, pk = nil, nil, nil

	_, _, g1, g2 := curve.Generators()
	mulG1 := func(s []fr.Element) ([]curve.G1Affine, error) { return multiplyG1(mul, g1, s) }
	mulG2 := func(s []fr.Element) ([]curve.G2Affine, error) { return multiplyG2(mul, g2, s) }
	// The sections in WriteDump's order, each one's scalars dropped when
	// it is written (B's after G2's B); Z's are made after A's are gone.
	sections := []struct {
		name  string
		write func() error
	}{
		{"g1.a", func() error { err := dumpPoints(w, sc.A, chunk, mulG1); sc.A = nil; return err }},
		{"g1.b", func() error { return dumpPoints(w, sc.B, chunk, mulG1) }},
		{"g1.z", func() error { return dumpPoints(w, sc.zScalars(), chunk, mulG1) }},
		{"g1.k", func() error { err := dumpPoints(w, sc.pkK, chunk, mulG1); sc.pkK = nil; return err }},
		{"g2.b", func() error { err := dumpPoints(w, sc.B, chunk, mulG2); sc.B = nil; return err }},
	}
	for _, s := range sections {
		if err := s.write(); err != nil {
			return nil, shape, fmt.Errorf("keygen: %s: %w", s.name, err)
		}
		debug.FreeOSMemory()
		st.done(s.name)
	}
	if vk.G1.K, err = multiplyG1(mul, g1, sc.vkK); err != nil {
		return nil, shape, fmt.Errorf("keygen: vk.g1.k (%d points): %w", len(sc.vkK), err)
	}
	pks, vks, err := commitmentKeys(mul, rnd, sc.basisK)
	if err != nil {
		return nil, shape, fmt.Errorf("keygen: %w", err)
	}
	vk.CommitmentKeys = vks
	for c := range pks {
		if err := writeCommitmentKey(w, &pks[c]); err != nil {
			return nil, shape, fmt.Errorf("keygen: write commitment %d's key: %w", c, err)
		}
	}
	if err := sc.finishVK(vk); err != nil {
		return nil, shape, err
	}
	st.done("vk")
	return vk, shape, nil
}

// writeDumpHeader writes what WriteDump writes before the first slice of
// points, by having gnark's WriteDump encode the key with no points and
// leaving out the empty slices' lengths it ends with: 5 slices, and 2 per
// commitment. pk's domain has no FFT tables (fft.WithoutPrecompute); with
// tables true its encoding says it has, as gnark's key's does, and a reader
// makes them.
func writeDumpHeader(w io.Writer, pk *groth16bls.ProvingKey, nbCommitments int, tables bool) error {
	pk.CommitmentKeys = make([]pedersen.ProvingKey, nbCommitments)
	var buf bytes.Buffer
	if err := pk.WriteDump(&buf); err != nil {
		return err
	}
	pk.CommitmentKeys = nil
	b := buf.Bytes()
	if tables {
		// The domain follows WriteDump's marker; its encoding ends with the
		// flag (one byte) that has ReadFrom make the tables.
		var marker, dom bytes.Buffer
		if err := gunsafe.WriteMarker(&marker); err != nil {
			return err
		}
		if _, err := pk.Domain.WriteTo(&dom); err != nil {
			return err
		}
		at := marker.Len() + dom.Len() - 1
		if !bytes.HasPrefix(b[marker.Len():], dom.Bytes()) || b[at] != 0 {
			return fmt.Errorf("proving key header: the domain's encoding is not where gnark's WriteDump puts it")
		}
		b[at] = 1
	}
	tail := 8 * (5 + 2*nbCommitments)
	if len(b) < tail {
		return fmt.Errorf("proving key header of %d bytes", len(b))
	}
	_, err := w.Write(b[:len(b)-tail])
	return err
}

// dumpPoints writes the points of scalars as unsafe.WriteSlice writes a
// slice (its length, then the points' memory), multiplying and writing
// chunk scalars at a time.
func dumpPoints[P any](w io.Writer, scalars []fr.Element, chunk int, mul func([]fr.Element) ([]P, error)) error {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(scalars)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	for lo := 0; lo < len(scalars); lo += chunk {
		hi := min(lo+chunk, len(scalars))
		pts, err := mul(scalars[lo:hi])
		if err != nil {
			return fmt.Errorf("points %d to %d of %d: %w", lo, hi, len(scalars), err)
		}
		if err := writeRaw(w, pts); err != nil {
			return err
		}
		if hi < len(scalars) {
			// The chunk is garbage: collect it before the next one rather
			// than let the heap grow to twice the live scalars.
			pts = nil
			runtime.GC()
		}
	}
	return nil
}

// writeRaw writes the memory of pts, as unsafe.WriteSlice does after the
// length.
func writeRaw[P any](w io.Writer, pts []P) error {
	if len(pts) == 0 {
		return nil
	}
	var p P
	_, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&pts[0])), int(unsafe.Sizeof(p))*len(pts)))
	return err
}

// writeCommitmentKey writes a commitment's basis and basis times σ as
// WriteDump does.
func writeCommitmentKey(w io.Writer, k *pedersen.ProvingKey) error {
	for _, s := range [][]curve.G1Affine{k.Basis, k.BasisExpSigma} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		if _, err := w.Write(n[:]); err != nil {
			return err
		}
		if err := writeRaw(w, s); err != nil {
			return err
		}
	}
	return nil
}
