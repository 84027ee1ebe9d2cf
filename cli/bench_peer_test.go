package cli

import (
	"context"
	"encoding/binary"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// TestPeerLayouts: the bytes the driver reads are gnark-crypto's limbs,
// least significant first, and a result the driver writes in that layout
// decodes to the same point; results of the wrong size or with a coordinate
// that is not below the modulus are refused.
func TestPeerLayouts(t *testing.T) {
	g1, g2, _, _ := bls12381.Generators()
	var s fr.Element
	s.SetUint64(12345)
	var p1 bls12381.G1Jac
	p1.ScalarMultiplication(&g1, s.BigInt(new(big.Int)))
	var a1 bls12381.G1Affine
	a1.FromJacobian(&p1)

	b := make([]byte, g1AffBytes)
	encodeG1Affine(b, &a1)
	if got := binary.LittleEndian.Uint64(b); got != a1.X[0] {
		t.Fatalf("first 8 bytes are %x, want X's least limb %x", got, a1.X[0])
	}
	if got := binary.LittleEndian.Uint64(b[fpBytes:]); got != a1.Y[0] {
		t.Fatalf("bytes 48..56 are %x, want Y's least limb %x", got, a1.Y[0])
	}

	jb := make([]byte, g1JacBytes)
	putLimbs(putLimbs(putLimbs(jb, p1.X[:]), p1.Y[:]), p1.Z[:])
	back, err := decodeG1Jac(jb)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(&p1) {
		t.Fatal("G1 Jacobian point does not survive encode and decode")
	}
	if _, err := decodeG1Jac(jb[:g1JacBytes-1]); err == nil {
		t.Fatal("a short G1 result was accepted")
	}
	bad := slices.Clone(jb)
	for i := fpBytes; i < 2*fpBytes; i++ {
		bad[i] = 0xff
	}
	if _, err := decodeG1Jac(bad); err == nil || !strings.Contains(err.Error(), "modulus") {
		t.Fatalf("a coordinate above the modulus gave %v", err)
	}
	var inf bls12381.G1Jac
	inf.X.SetOne()
	putLimbs(putLimbs(putLimbs(jb, inf.X[:]), inf.Y[:]), inf.Z[:])
	if back, err = decodeG1Jac(jb); err != nil || !back.Z.IsZero() || !back.Y.IsOne() {
		t.Fatalf("infinity decodes to %v, %v; want (1, 1, 0)", back, err)
	}

	var p2 bls12381.G2Jac
	p2.ScalarMultiplication(&g2, s.BigInt(new(big.Int)))
	var a2 bls12381.G2Affine
	a2.FromJacobian(&p2)
	b2 := make([]byte, g2AffBytes)
	encodeG2Affine(b2, &a2)
	if got := binary.LittleEndian.Uint64(b2[fpBytes:]); got != a2.X.A1[0] {
		t.Fatalf("bytes 48..56 of a G2 point are %x, want X.A1's least limb %x", got, a2.X.A1[0])
	}
	j2 := make([]byte, g2JacBytes)
	rest := putLimbs(putLimbs(j2, p2.X.A0[:]), p2.X.A1[:])
	rest = putLimbs(putLimbs(rest, p2.Y.A0[:]), p2.Y.A1[:])
	putLimbs(putLimbs(rest, p2.Z.A0[:]), p2.Z.A1[:])
	back2, err := decodeG2Jac(j2)
	if err != nil {
		t.Fatal(err)
	}
	if !back2.Equal(&p2) {
		t.Fatal("G2 Jacobian point does not survive encode and decode")
	}

	v := benchScalars(5)
	path := filepath.Join(t.TempDir(), "scalars.bin")
	if err := writeElements(path, v, frBytes, encodeFr); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeFrs(raw, len(v))
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(got, v); i >= 0 {
		t.Fatalf("scalar %d does not survive the file", i)
	}
	if _, err := decodeFrs(raw, len(v)+1); err == nil {
		t.Fatal("an NTT result of the wrong length was accepted")
	}
}

// fakeDriver writes a shell script that behaves as the driver would.
func fakeDriver(t *testing.T, body string) peerDriver {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "peer-driver")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return peerDriver{path: path, logDir: dir, timeout: 5 * time.Second}
}

// TestPeerDriverRun: the driver's times come back, its output is kept, and
// each way it can fail gives an error that says what happened.
func TestPeerDriverRun(t *testing.T) {
	ctx := context.Background()
	d := fakeDriver(t, `echo "args: $*" >&2; echo "times_ms: 1.5000 2.2500 3.0000"`)
	ms, err := d.run(ctx, "msm-g1-4", "msm-g1", "4", "p", "s", "3", "out")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ms, []float64{1.5, 2.25, 3}) {
		t.Fatalf("times %v, want [1.5 2.25 3]", ms)
	}
	if medianMs(ms) != 2.25 || medianMs([]float64{4, 1, 3, 2}) != 2.5 {
		t.Fatal("median is wrong")
	}
	log, err := os.ReadFile(filepath.Join(d.logDir, "driver-msm-g1-4.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "args: msm-g1 4 p s 3 out") {
		t.Fatalf("log does not keep the driver's stderr:\n%s", log)
	}

	for _, c := range []struct{ body, want string }{
		{`echo "peer-driver: G1 MSM: out of memory" >&2; exit 1`, "out of memory"},
		{`echo "nothing useful"`, "no \"times_ms:\" line"},
		{`echo "times_ms:"`, "no times"},
		{`echo "times_ms: 1.0 fast"`, `"fast"`},
		{`sleep 10`, "longer than"},
	} {
		d := fakeDriver(t, c.body)
		d.timeout = 300 * time.Millisecond
		if _, err := d.run(ctx, "x", "ntt"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("driver %q: error %v, want one that says %q", c.body, err, c.want)
		}
	}
}

func TestPeerLogSizes(t *testing.T) {
	if v, err := peerLogSizes("x", " 20, 22 ,24"); err != nil || !slices.Equal(v, []int{20, 22, 24}) {
		t.Fatalf("got %v, %v", v, err)
	}
	if v, err := peerLogSizes("x", ""); err != nil || v != nil {
		t.Fatalf("empty list gave %v, %v", v, err)
	}
	for _, bad := range []string{"0", "29", "20,x", "-3"} {
		if _, err := peerLogSizes("x", bad); err == nil {
			t.Fatalf("%q was accepted", bad)
		}
	}
}
