package prover

import (
	"bufio"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/pedersen"
	"github.com/consensys/gnark-crypto/utils/unsafe"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// The proving key is gnark's dump (ProvingKey.WriteDump): a marker, the
// domain, the fixed-size fields and the infinity flags, then each vector of
// points as a little-endian uint64 count and the points' bytes as
// gnark-crypto holds them in memory, in the order A, B, Z, K, G2 B, then
// the commitments' bases. readDump reads it as ReadDump does, but leaves
// each vector of A, B, Z, K and G2 B to a callback, which may skip it: a
// key set can be loaded without its points, and the points file made from
// the dump without holding them.

// dumpSection is one vector of points in the dump.
type dumpSection struct {
	name   string // A, B, Z, K or G2 B
	n      int
	size   int   // bytes a point
	offset int64 // of its first point in the file
}

func (s dumpSection) bytes() int64 { return int64(s.n) * int64(s.size) }

// dumpInput reads a file from the start, counting the bytes it gives (the
// offset of the next one) and hashing them when h is set. Read fills its
// buffer or fails, as the dump's decoders assume.
type dumpInput struct {
	f    *os.File
	br   *bufio.Reader
	off  int64
	size int64     // the file's
	h    hash.Hash // nil: skip seeks
}

func newDumpInput(f *os.File, h hash.Hash) (*dumpInput, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &dumpInput{f: f, br: bufio.NewReaderSize(f, 1<<20), size: st.Size(), h: h}, nil
}

func (in *dumpInput) Read(p []byte) (int, error) {
	n, err := io.ReadFull(in.br, p)
	in.off += int64(n)
	if in.h != nil {
		in.h.Write(p[:n])
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

// skip passes over n bytes: read through the hash when there is one, else
// a seek.
func (in *dumpInput) skip(n int64) error {
	if in.off+n > in.size {
		return io.ErrUnexpectedEOF
	}
	if in.h != nil {
		got, err := io.CopyN(io.Discard, in, n)
		if err == nil && got != n {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if _, err := in.f.Seek(in.off+n, io.SeekStart); err != nil {
		return err
	}
	in.br.Reset(in.f)
	in.off += n
	return nil
}

// drain reads the rest of the file through the hash.
func (in *dumpInput) drain() error {
	if in.h == nil {
		return nil
	}
	_, err := io.Copy(io.Discard, in)
	return err
}

// readDump reads the dump in into pk, except the vectors of points A, B, Z,
// K and G2 B: for each, points is called with the vector's place, and must
// consume exactly its bytes from in (read them, or in.skip). The
// commitments' bases are read into pk.
func readDump(in *dumpInput, pk *groth16bls.ProvingKey, points func(s dumpSection, in *dumpInput) error) error {
	if err := unsafe.ReadMarker(in); err != nil {
		return fmt.Errorf("read marker: %w", err)
	}
	if _, err := pk.Domain.ReadFrom(in); err != nil {
		return fmt.Errorf("read domain: %w", err)
	}
	dec := curve.NewDecoder(in, curve.NoSubgroupChecks())
	var nbWires uint64
	for i, v := range []any{&pk.G1.Alpha, &pk.G1.Beta, &pk.G1.Delta, &pk.G2.Beta, &pk.G2.Delta, &nbWires, &pk.NbInfinityA, &pk.NbInfinityB} {
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("read field %d: %w", i, err)
		}
	}
	// A bool a byte: more wires than bytes left is a corrupt count.
	if nbWires > uint64(in.size-in.off) {
		return fmt.Errorf("%d wires in a file of %d bytes", nbWires, in.size)
	}
	pk.InfinityA, pk.InfinityB = make([]bool, nbWires), make([]bool, nbWires)
	var nbCommitments uint32
	for i, v := range []any{&pk.InfinityA, &pk.InfinityB, &nbCommitments} {
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("read field %d: %w", 8+i, err)
		}
	}
	for _, s := range []struct {
		name string
		size int
	}{{"A", 96}, {"B", 96}, {"Z", 96}, {"K", 96}, {"G2 B", 192}} {
		var count [8]byte
		if _, err := io.ReadFull(in, count[:]); err != nil {
			return fmt.Errorf("read %s: %w", s.name, err)
		}
		n := uint64(count[0]) | uint64(count[1])<<8 | uint64(count[2])<<16 | uint64(count[3])<<24 |
			uint64(count[4])<<32 | uint64(count[5])<<40 | uint64(count[6])<<48 | uint64(count[7])<<56
		if n > uint64(in.size-in.off)/uint64(s.size) {
			return fmt.Errorf("read %s: %d points of %d bytes at offset %d run past the end of the file (%d bytes): truncated?",
				s.name, n, s.size, in.off, in.size)
		}
		sec := dumpSection{name: s.name, n: int(n), size: s.size, offset: in.off}
		if err := points(sec, in); err != nil {
			return fmt.Errorf("read %s: %w", s.name, err)
		}
		if want := sec.offset + sec.bytes(); in.off != want {
			return fmt.Errorf("read %s: ended at offset %d, not %d", s.name, in.off, want)
		}
	}
	for i := range int(nbCommitments) {
		var ck pedersen.ProvingKey
		var err error
		if ck.Basis, _, err = unsafe.ReadSlice[[]curve.G1Affine](in, max(int((in.size-in.off)/96), 1)); err != nil {
			return fmt.Errorf("read commitment basis %d: %w", i, err)
		}
		if ck.BasisExpSigma, _, err = unsafe.ReadSlice[[]curve.G1Affine](in, max(int((in.size-in.off)/96), 1)); err != nil {
			return fmt.Errorf("read commitment basisExpSigma %d: %w", i, err)
		}
		pk.CommitmentKeys = append(pk.CommitmentKeys, ck)
	}
	return nil
}

// readPoints reads the vector s from in into a new slice of T.
func readPoints[T any](s dumpSection, in *dumpInput) ([]T, error) {
	out := make([]T, s.n)
	if s.n == 0 {
		return out, nil
	}
	if _, err := io.ReadFull(in, bytesOf(out)); err != nil {
		return nil, err
	}
	return out, nil
}
