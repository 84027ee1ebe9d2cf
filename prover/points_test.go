package prover

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

// savedKeys is the package's mimc keys written to a directory of their own.
func savedKeys(t *testing.T) (*Keys, string) {
	t.Helper()
	k := testKeys(t, "mimc")
	dir := t.TempDir()
	saved := &Keys{Circuit: k.Circuit, Layout: k.Layout, CS: k.CS, PK: k.PK, VK: k.VK}
	if err := saved.Save(dir); err != nil {
		t.Fatal(err)
	}
	return saved, dir
}

// naturalOrder is gnark's bit-reversed Z in natural order, as the device's
// H has its coefficients (gpuprove's naturalZ).
func naturalOrder(z []curve.G1Affine, n int) []curve.G1Affine {
	logN := bits.Len(uint(n)) - 1
	out := make([]curve.G1Affine, len(z))
	for j := range z {
		out[bits.Reverse64(uint64(j))>>(64-logN)] = z[j]
	}
	return out
}

// The points file holds the proving key's points, Z in natural order, and
// a stream reads them back in chunks of any size (smaller than a checksum
// block, across blocks, whole blocks), checking every block.
func TestPointsFileHoldsTheKeysPoints(t *testing.T) {
	k, dir := savedKeys(t)
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks of 64 points: the key's vectors are a few blocks each, and
	// their last block short.
	if err := writePoints(dir, m, 64); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPoints(filepath.Join(dir, PointsFileName), k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pk := k.PK
	want := map[string][]byte{
		"A": bytesOf(pk.G1.A), "B": bytesOf(pk.G1.B), "K": bytesOf(pk.G1.K), "G2 B": bytesOf(pk.G2.B),
		"Z": bytesOf(naturalOrder(pk.G1.Z, int(pk.Domain.Cardinality))),
	}
	if p.Counts() != k.Counts() || p.Domain != pk.Domain.Cardinality || p.BlockPoints != 64 {
		t.Fatalf("points file: %+v, domain %d, blocks of %d; the key: %+v, domain %d", p.Counts(), p.Domain, p.BlockPoints, k.Counts(), pk.Domain.Cardinality)
	}
	for name, w := range want {
		for _, chunk := range []int{5, 64, 100, 256, 1 << 20} {
			s, err := p.Stream(name)
			if err != nil {
				t.Fatal(err)
			}
			sec := s.Section()
			got := make([]byte, sec.Bytes())
			for from := 0; from < sec.N; from += chunk {
				to := min(from+chunk, sec.N)
				if err := s.Read(got[int64(from)*int64(sec.Size):], from, to); err != nil {
					t.Fatalf("%s, chunks of %d: %v", name, chunk, err)
				}
			}
			if !bytes.Equal(got, w) {
				t.Fatalf("%s read in chunks of %d points differs from the key's", name, chunk)
			}
		}
	}
	// A read that starts inside a block it has not read is refused: that
	// block's checksum could not be checked.
	s, _ := p.Stream("A")
	if err := s.Read(make([]byte, 96*10), 3, 13); err == nil || !strings.Contains(err.Error(), "inside a block") {
		t.Fatalf("a read from the middle of a block: %v", err)
	}
}

// The tiled bit reversal is the permutation, for every size of domain
// from 1 to 2^13 (tiles of one point to 2^12).
func TestBitReverseCopy(t *testing.T) {
	for logN := range 14 {
		n := 1 << logN
		count := max(n-1, 0)
		src := make([]byte, 4*count)
		for j := range count {
			binary.LittleEndian.PutUint32(src[4*j:], uint32(j))
		}
		dst := &sliceWriter{b: make([]byte, 4*count)}
		if err := bitReverseCopy(bytes.NewReader(src), 0, dst, 0, logN, count, 4); err != nil {
			t.Fatal(err)
		}
		for i := range count {
			want := uint32(0)
			if logN > 0 {
				want = uint32(bits.Reverse64(uint64(i)) >> (64 - logN))
			}
			if got := binary.LittleEndian.Uint32(dst.b[4*i:]); got != want {
				t.Fatalf("2^%d: point %d is input %d, want %d", logN, i, got, want)
			}
		}
	}
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) WriteAt(p []byte, off int64) (int, error) { return copy(w.b[off:], p), nil }

// Keys loaded without their points hold none in memory but know how many
// there are, prepare partitions, and refuse the CPU's MSMs with a clear
// error; the points file is written on that first load.
func TestLoadWithoutPoints(t *testing.T) {
	full, dir := savedKeys(t)
	if c, err := ReadPointCounts(dir); err != nil || c != full.Counts() {
		t.Fatalf("the proving key's header counts %+v (%v), the key has %+v", c, err, full.Counts())
	}
	if _, err := ReadPointCounts(t.TempDir()); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("counts of a directory without keys: %v", err)
	}
	k, err := LoadWith(dir, "mimc", full.Layout, LoadOptions{PointsOnDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Points.Close()
	if k.PointsInMemory() || len(k.PK.G1.A)+len(k.PK.G1.B)+len(k.PK.G1.Z)+len(k.PK.G1.K)+len(k.PK.G2.B) != 0 {
		t.Fatalf("keys loaded without points hold %d A points, %d G2 B", len(k.PK.G1.A), len(k.PK.G2.B))
	}
	if k.Counts() != full.Counts() || k.Hash != full.Hash || k.PK.NbInfinityA != full.PK.NbInfinityA {
		t.Fatalf("counts %+v, hash %s; the full load's %+v, %s", k.Counts(), short(k.Hash), full.Counts(), short(full.Hash))
	}
	if _, err := os.Stat(filepath.Join(dir, PointsFileName)); err != nil {
		t.Fatalf("no points file after the load: %v", err)
	}
	w, err := Witness(k, []byte("disk"), 0)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := Synthesize(k, w)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prep(k, sol)
	if err != nil {
		t.Fatalf("prep with keys on disk: %v", err)
	}
	st, _ := CPU{}.Stage(context.Background(), k, p)
	if _, err := (CPU{}).Compute(context.Background(), k, st); err == nil || !strings.Contains(err.Error(), PointsFileName) {
		t.Fatalf("the CPU's MSMs without points: %v", err)
	}
	if _, err := BG2(context.Background(), k, p); err == nil {
		t.Fatal("b_g2 on the CPU without the G2 points: no error")
	}
	g2, err := LoadWith(dir, "mimc", full.Layout, LoadOptions{PointsOnDisk: true, G2InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Points.Close()
	if len(g2.PK.G2.B) != full.Counts().G2B || len(g2.PK.G1.A) != 0 {
		t.Fatalf("G2InMemory kept %d G2 B points (want %d) and %d A points", len(g2.PK.G2.B), full.Counts().G2B, len(g2.PK.G1.A))
	}
}

// A points file that is truncated, corrupt, or another key set's is an
// error that names it, never a panic; a corrupt block is found by the read
// that would use it; a proving key that is not the manifest's makes no
// points file.
func TestPointsFileErrors(t *testing.T) {
	k, dir := savedKeys(t)
	p, err := EnsurePoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	path := filepath.Join(dir, PointsFileName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := int64(binary.LittleEndian.Uint64(good[64+24:]))
	for _, c := range []struct {
		name   string
		mangle func([]byte) []byte
		want   string // in the error of EnsurePoints, or of the read when it opens
		read   bool
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, "truncated", false},
		{"cut in the header", func(b []byte) []byte { return b[:100] }, "truncated", false},
		{"empty", func(b []byte) []byte { return nil }, "truncated", false},
		{"not a points file", func(b []byte) []byte { b[0] = 'X'; return b }, "not a points file", false},
		{"another version", func(b []byte) []byte { b[8] = 9; return b }, "version 9", false},
		{"header flipped", func(b []byte) []byte { b[50] ^= 1; return b }, "header fails its checksum", false},
		{"checksums flipped", func(b []byte) []byte { b[len(b)-9] ^= 1; return b }, "table of checksums", false},
		{"a point flipped", func(b []byte) []byte { b[a+200] ^= 1; return b }, "section A, block 0", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, c.mangle(bytes.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := EnsurePoints(dir)
			if c.read && err == nil {
				defer p.Close()
				s, _ := p.Stream("A")
				err = s.Read(make([]byte, s.Section().Bytes()), 0, s.Section().N)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v; want an error naming %s that says %q", err, path, c.want)
			}
			t.Log(err)
		})
	}
	// Made for another key set.
	os.WriteFile(path, good, 0o644)
	if _, err := OpenPoints(path, strings.Repeat("ab", 32)); err == nil || !strings.Contains(err.Error(), "made from key set "+short(k.Hash)) {
		t.Fatalf("another key set's points file: %v", err)
	}
	// A proving key changed under its manifest: refused, nothing written.
	os.Remove(path)
	pkPath := filepath.Join(dir, pkFile)
	b, _ := os.ReadFile(pkPath)
	b[len(b)/2] ^= 1
	os.WriteFile(pkPath, b, 0o644)
	if _, err := EnsurePoints(dir); err == nil || !strings.Contains(err.Error(), "corrupt or was replaced") {
		t.Fatalf("points from a proving key its manifest does not know: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*points*")); len(left) != 0 {
		t.Fatalf("a failed write left %v", left)
	}
	// Setup over a directory removes the points file of the keys before.
	os.WriteFile(path, good, 0o644)
	if err := k.Save(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the old points file survives a new setup: %v", err)
	}
}
