package cli

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
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
	if median(ms) != 2.25 || median([]float64{4, 1, 3, 2}) != 2.5 {
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
		{`exec sleep 10`, "longer than"},
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

// The test binary doubles as a peer driver when this variable is set: it
// reads the files bench peer wrote, computes on the CPU with gnark-crypto
// and writes its results in the driver's layout. Set to "wrong", it adds the
// generator to MSM results and one to NTT outputs.
const fakeDriverEnv = "CUZK_TEST_FAKE_PEER_DRIVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeDriverEnv); mode != "" {
		if err := fakeDriverMain(os.Args[1:], mode == "wrong"); err != nil {
			fmt.Fprintln(os.Stderr, "peer-driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeDriverMain(args []string, wrong bool) error {
	if len(args) < 5 {
		return fmt.Errorf("args %v", args)
	}
	lg, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	n := 1 << lg
	readFrs := func(path string) ([]fr.Element, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(b) < n*frBytes {
			return nil, fmt.Errorf("%s is short", path)
		}
		return decodeFrs(b[:n*frBytes], n)
	}
	var out []byte
	switch args[0] {
	case "msm-g1", "msm-g2":
		scalars, err := readFrs(args[3])
		if err != nil {
			return err
		}
		pb, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		g1, g2, _, _ := bls12381.Generators()
		if args[0] == "msm-g1" {
			points := make([]bls12381.G1Affine, n)
			for i := range points {
				getLimbs(getLimbs(pb[i*g1AffBytes:], points[i].X[:]), points[i].Y[:])
			}
			var r bls12381.G1Jac
			if _, err := r.MultiExp(points, scalars, ecc.MultiExpConfig{}); err != nil {
				return err
			}
			if wrong {
				r.AddAssign(&g1)
			}
			out = make([]byte, g1JacBytes)
			putLimbs(putLimbs(putLimbs(out, r.X[:]), r.Y[:]), r.Z[:])
		} else {
			points := make([]bls12381.G2Affine, n)
			for i := range points {
				rest := getLimbs(getLimbs(pb[i*g2AffBytes:], points[i].X.A0[:]), points[i].X.A1[:])
				getLimbs(getLimbs(rest, points[i].Y.A0[:]), points[i].Y.A1[:])
			}
			var r bls12381.G2Jac
			if _, err := r.MultiExp(points, scalars, ecc.MultiExpConfig{}); err != nil {
				return err
			}
			if wrong {
				r.AddAssign(&g2)
			}
			out = make([]byte, g2JacBytes)
			rest := putLimbs(putLimbs(out, r.X.A0[:]), r.X.A1[:])
			rest = putLimbs(putLimbs(rest, r.Y.A0[:]), r.Y.A1[:])
			putLimbs(putLimbs(rest, r.Z.A0[:]), r.Z.A1[:])
		}
	case "ntt":
		v, err := readFrs(args[2])
		if err != nil {
			return err
		}
		fft.NewDomain(uint64(n)).FFT(v, fft.DIF)
		fft.BitReverse(v)
		if wrong {
			var one fr.Element
			v[n-1].Add(&v[n-1], one.SetOne())
		}
		out = make([]byte, n*frBytes)
		for i := range v {
			encodeFr(out[i*frBytes:], &v[i])
		}
	default:
		return fmt.Errorf("unknown kind %s", args[0])
	}
	if err := os.WriteFile(args[len(args)-1], out, 0o644); err != nil {
		return err
	}
	fmt.Println("times_ms: 2.0 1.0 3.0")
	return nil
}

// cpuSelf stands in for cuzk's kernels: gnark-crypto on the CPU.
type cpuSelf struct{}

func (cpuSelf) msmG1(points []bls12381.G1Affine, scalars []fr.Element, runs int) (bls12381.G1Affine, []float64, error) {
	var r bls12381.G1Affine
	_, err := r.MultiExp(points, scalars, ecc.MultiExpConfig{})
	return r, slices.Repeat([]float64{1}, runs), err
}

func (s cpuSelf) msmG1Table(points []bls12381.G1Affine, scalars []fr.Element, runs int) (bls12381.G1Affine, []float64, error) {
	return s.msmG1(points, scalars, runs)
}

func (cpuSelf) msmG2(points []bls12381.G2Affine, scalars []fr.Element, runs int) (bls12381.G2Affine, []float64, error) {
	var r bls12381.G2Affine
	_, err := r.MultiExp(points, scalars, ecc.MultiExpConfig{})
	return r, slices.Repeat([]float64{1}, runs), err
}

func (cpuSelf) nttForward(data []fr.Element, lg, runs int) ([]fr.Element, []float64, error) {
	v := slices.Clone(data)
	fft.NewDomain(uint64(len(v))).FFT(v, fft.DIF)
	fft.BitReverse(v)
	return v, slices.Repeat([]float64{1}, runs), nil
}

// TestPeerRun runs bench peer's whole flow with cuzk's side on the CPU and
// the test binary as the driver: every case is checked and tabulated, and a
// driver whose results are wrong is caught in every case.
func TestPeerRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"right", "wrong"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fakeDriverEnv, mode)
			dir := t.TempDir()
			p := &peerPlan{
				driver: peerDriver{path: self, logDir: dir, timeout: time.Minute},
				inputs: dir, g1: []int{3, 5}, g2: []int{4}, ntt: []int{6}, runs: 3,
				jsonOut: filepath.Join(dir, "peer.json"), tables: true,
			}
			var out strings.Builder
			err := p.run(context.Background(), &out, cpuSelf{})
			table := out.String()
			var rows []peerRow
			if b, jerr := os.ReadFile(p.jsonOut); jerr != nil {
				t.Fatal(jerr)
			} else if jerr := json.Unmarshal(b, &rows); jerr != nil {
				t.Fatal(jerr)
			}
			// With --g1-tables each G1 size has a second row, over a table,
			// beside sppark's times of the plain row.
			if len(rows) != 6 || rows[1].Kernel != "G1 MSM, table" || rows[1].Log != 3 {
				t.Fatalf("%d rows, want 6 with a table row after each G1 row:\n%s", len(rows), table)
			}
			for _, r := range rows {
				if !r.CuzkOK || !slices.Equal(r.PeerMs, []float64{2, 1, 3}) {
					t.Fatalf("row %+v", r)
				}
				if r.PeerOK != (mode == "right") {
					t.Fatalf("mode %s: %s 2^%d sppark checked %v\n%s", mode, r.Kernel, r.Log, r.PeerOK, table)
				}
			}
			if mode == "right" {
				if err != nil {
					t.Fatalf("%v\n%s", err, table)
				}
				for _, want := range []string{"G1 MSM 2^5 1.00 2.00 2.00x yes", "G1 MSM, table 2^5 1.00 2.00 2.00x yes"} {
					found := false
					for _, line := range strings.Split(table, "\n") {
						found = found || strings.Join(strings.Fields(line), " ") == want
					}
					if !found {
						t.Fatalf("no row %q in the table:\n%s", want, table)
					}
				}
			} else {
				if err == nil || strings.Count(table, "differs from gnark-crypto") != 4 || !strings.Contains(table, " NO") {
					t.Fatalf("wrong results gave %v and\n%s", err, table)
				}
				if testing.Verbose() {
					t.Logf("%v\n%s", err, table)
				}
			}
		})
	}
}
