package keygen_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
)

// seeded is a reproducible source of toxic waste.
func seeded(seed byte) *mrand.ChaCha8 { return mrand.NewChaCha8([32]byte{seed}) }

// testLayouts are small shapes of the example circuits: mimc at the smallest
// target (1000 constraints), porep with one challenge of depth 1 (1669
// constraints, three public inputs).
var testLayouts = map[string]circuits.Layout{
	"porep": {"depth": 1, "challenges": 1},
}

var (
	cacheMu  sync.Mutex
	compiled = map[string]*prover.Keys{}
	made     = map[string]*prover.Keys{}
)

// compile returns the circuit at its test layout (or the layout of target),
// as Keys without keys.
func compile(t testing.TB, name string, target int) *prover.Keys {
	t.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	key := fmt.Sprintf("%s-%d", name, target)
	if k, ok := compiled[key]; ok {
		return &prover.Keys{Circuit: k.Circuit, Layout: k.Layout, CS: k.CS}
	}
	c, err := circuits.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	skipLarge(t, c)
	l, ok := testLayouts[name]
	if !ok || target != circuits.MinConstraints {
		if l, err = c.Layout(target); err != nil {
			t.Fatal(err)
		}
	}
	ccs, err := circuits.Compile(c, l)
	if err != nil {
		t.Fatal(err)
	}
	k := &prover.Keys{Circuit: name, Layout: l, CS: ccs.(*cs.R1CS)}
	compiled[key] = k
	return &prover.Keys{Circuit: k.Circuit, Layout: k.Layout, CS: k.CS}
}

// skipLarge skips circuits whose smallest instance takes minutes of keygen
// on the CPU (sha2's, 157,756 constraints); package circuits and cli's bench
// cover them.
func skipLarge(t testing.TB, c circuits.Circuit) {
	t.Helper()
	if n, err := circuits.Smallest(c); err == nil && n > 1<<16 {
		t.Skipf("%s: its smallest instance has %d constraints", c.Name(), n)
	}
}

// setup runs keygen.Setup on the CPU with toxic waste from seed.
func setup(t testing.TB, name string, seed byte) *prover.Keys {
	t.Helper()
	k := compile(t, name, circuits.MinConstraints)
	var err error
	if k.PK, k.VK, err = keygen.Setup(k.CS, keygen.CPUMultiplier{}, seeded(seed)); err != nil {
		t.Fatal(err)
	}
	return k
}

// withKeys is setup, made once per circuit and seed for the package's tests.
func withKeys(t testing.TB, name string, seed byte) *prover.Keys {
	t.Helper()
	key := fmt.Sprintf("%s-%d", name, seed)
	cacheMu.Lock()
	k, ok := made[key]
	cacheMu.Unlock()
	if !ok {
		k = setup(t, name, seed)
		cacheMu.Lock()
		made[key] = k
		cacheMu.Unlock()
	}
	return k
}

// TestProofsVerify: keys from keygen are accepted by gnark's prover and
// verifier and by cuzk's staged prover, for every example circuit, and a
// proof does not verify against another partition's public inputs.
func TestProofsVerify(t *testing.T) {
	for _, name := range circuits.Names() {
		t.Run(name, func(t *testing.T) {
			k := withKeys(t, name, 1)
			w, err := prover.Witness(k, []byte("keygen"), 0)
			if err != nil {
				t.Fatal(err)
			}
			pub, _ := w.Public()
			other, _ := prover.Witness(k, []byte("keygen"), 1)
			otherPub, _ := other.Public()

			proof, err := groth16.Prove(k.CS, k.PK, w)
			if err != nil {
				t.Fatalf("gnark's prover: %v", err)
			}
			if err := groth16.Verify(proof, k.VK, pub); err != nil {
				t.Fatalf("gnark rejects gnark's proof: %v", err)
			}
			if err := groth16.Verify(proof, k.VK, otherPub); err == nil {
				t.Fatal("gnark's proof verifies for another partition's public inputs")
			}

			staged, _, err := prover.Prove(context.Background(), k, prover.CPU{}, w, nil)
			if err != nil {
				t.Fatalf("staged prover: %v", err)
			}
			if err := groth16.Verify(staged, k.VK, pub); err != nil {
				t.Fatalf("gnark rejects the staged prover's proof: %v", err)
			}
			if err := groth16.Verify(staged, k.VK, otherPub); err == nil {
				t.Fatal("the staged proof verifies for another partition's public inputs")
			}
		})
	}
}

// TestSetupWith: prover.SetupWith with a multiplier goes through keygen, and
// the keys prove.
func TestSetupWith(t *testing.T) {
	c, _ := circuits.Lookup("mimc")
	k, err := prover.SetupWith(c, circuits.MinConstraints, keygen.CPUMultiplier{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := prover.Witness(k, []byte("with"), 2)
	if _, _, err := prover.Prove(context.Background(), k, prover.CPU{}, w, nil); err != nil {
		t.Fatal(err)
	}
}

// TestStructureMatchesGnark compares keygen's keys with gnark's Setup on the
// same circuit: the domain (with its precomputed tables), every slice's
// length, the infinity flags and counts, which K points are at infinity, the
// commitment fields, and the size of the raw encodings.
func TestStructureMatchesGnark(t *testing.T) {
	for _, name := range circuits.Names() {
		t.Run(name, func(t *testing.T) {
			k := withKeys(t, name, 1)
			gpk, gvk, err := groth16.Setup(k.CS)
			if err != nil {
				t.Fatal(err)
			}
			want, wantVK := gpk.(*groth16bls.ProvingKey), gvk.(*groth16bls.VerifyingKey)
			pk, vk := k.PK, k.VK

			if !reflect.DeepEqual(pk.Domain, want.Domain) {
				t.Error("domains differ")
			}
			for _, c := range []struct {
				what      string
				got, want int
			}{
				{"G1.A", len(pk.G1.A), len(want.G1.A)},
				{"G1.B", len(pk.G1.B), len(want.G1.B)},
				{"G1.Z", len(pk.G1.Z), len(want.G1.Z)},
				{"G1.K", len(pk.G1.K), len(want.G1.K)},
				{"G2.B", len(pk.G2.B), len(want.G2.B)},
				{"NbInfinityA", int(pk.NbInfinityA), int(want.NbInfinityA)},
				{"NbInfinityB", int(pk.NbInfinityB), int(want.NbInfinityB)},
				{"vk.G1.K", len(vk.G1.K), len(wantVK.G1.K)},
				{"CommitmentKeys", len(pk.CommitmentKeys), len(want.CommitmentKeys)},
				{"vk.CommitmentKeys", len(vk.CommitmentKeys), len(wantVK.CommitmentKeys)},
			} {
				if c.got != c.want {
					t.Errorf("%s: %d, gnark %d", c.what, c.got, c.want)
				}
			}
			if pk.NbInfinityA == 0 || pk.NbInfinityB == 0 {
				t.Error("no point at infinity in A or B: the filtering is not exercised")
			}
			if !reflect.DeepEqual(pk.InfinityA, want.InfinityA) || !reflect.DeepEqual(pk.InfinityB, want.InfinityB) {
				t.Error("infinity flags differ")
			}
			if !reflect.DeepEqual(vk.PublicAndCommitmentCommitted, wantVK.PublicAndCommitmentCommitted) {
				t.Errorf("PublicAndCommitmentCommitted %#v, gnark %#v", vk.PublicAndCommitmentCommitted, wantVK.PublicAndCommitmentCommitted)
			}
			if !reflect.DeepEqual(infinities(pk.G1.K), infinities(want.G1.K)) ||
				!reflect.DeepEqual(infinities(vk.G1.K), infinities(wantVK.G1.K)) {
				t.Error("K points at infinity differ")
			}
			for _, pts := range [][]curve.G1Affine{pk.G1.A, pk.G1.B, pk.G1.Z} {
				if len(infinities(pts)) != 0 {
					t.Error("a point at infinity left in A, B or Z")
				}
			}
			if got, want := rawSize(t, pk), rawSize(t, want); got != want {
				t.Errorf("proving key encodes to %d bytes, gnark's to %d", got, want)
			}
			if got, want := rawSize(t, vk), rawSize(t, wantVK); got != want {
				t.Errorf("verifying key encodes to %d bytes, gnark's to %d", got, want)
			}
		})
	}
}

func infinities(pts []curve.G1Affine) []int {
	var out []int
	for i := range pts {
		if pts[i].IsInfinity() {
			out = append(out, i)
		}
	}
	return out
}

func rawSize(t *testing.T, k interface {
	WriteRawTo(io.Writer) (int64, error)
}) int64 {
	t.Helper()
	n, err := k.WriteRawTo(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestToxicWasteFromReader: the same reader gives the same keys, another
// reader other keys, and a reader that runs dry an error.
func TestToxicWasteFromReader(t *testing.T) {
	a, b, c := withKeys(t, "mimc", 1), setup(t, "mimc", 1), setup(t, "mimc", 4)
	if !bytes.Equal(encode(t, a), encode(t, b)) {
		t.Error("the same seed gave different keys")
	}
	if bytes.Equal(encode(t, a), encode(t, c)) {
		t.Error("two seeds gave the same keys")
	}
	k := compile(t, "mimc", circuits.MinConstraints)
	if _, _, err := keygen.Setup(k.CS, nil, bytes.NewReader(make([]byte, 100))); err == nil {
		t.Error("100 bytes of randomness were enough for five secrets")
	}
}

// encode is both keys' raw encoding.
func encode(t *testing.T, k *prover.Keys) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := k.PK.WriteRawTo(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := k.VK.WriteRawTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Keys for circuits with commitments have gnark's layout: the same number
// of K points in each key and in each commitment's basis, and gnark's own
// prover, given keygen's keys, makes proofs gnark's verifier accepts.
func TestCommitmentKeysWorkWithGnark(t *testing.T) {
	for _, tc := range []struct {
		name    string
		circuit frontend.Circuit
		assign  frontend.Circuit
	}{
		{"commit", &circuits.WithCommitment{}, &circuits.WithCommitment{X: 3, Y: 9}},
		{"rangecheck", &circuits.RangeCheck{}, circuits.NewRangeCheck(77777)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, tc.circuit)
			if err != nil {
				t.Fatal(err)
			}
			pk, vk, err := keygen.Setup(ccs.(*cs.R1CS), nil, seeded(9))
			if err != nil {
				t.Fatal(err)
			}
			gpk, gvk, err := groth16.Setup(ccs)
			if err != nil {
				t.Fatal(err)
			}
			want, wantVK := gpk.(*groth16bls.ProvingKey), gvk.(*groth16bls.VerifyingKey)
			if len(pk.G1.K) != len(want.G1.K) || len(vk.G1.K) != len(wantVK.G1.K) || len(pk.CommitmentKeys) != len(want.CommitmentKeys) {
				t.Fatalf("K points %d/%d, commitment keys %d; gnark %d/%d, %d",
					len(pk.G1.K), len(vk.G1.K), len(pk.CommitmentKeys), len(want.G1.K), len(wantVK.G1.K), len(want.CommitmentKeys))
			}
			for i := range pk.CommitmentKeys {
				if len(pk.CommitmentKeys[i].Basis) != len(want.CommitmentKeys[i].Basis) {
					t.Errorf("commitment %d: %d basis points, gnark %d", i, len(pk.CommitmentKeys[i].Basis), len(want.CommitmentKeys[i].Basis))
				}
			}
			if !reflect.DeepEqual(vk.PublicAndCommitmentCommitted, wantVK.PublicAndCommitmentCommitted) {
				t.Errorf("PublicAndCommitmentCommitted %v, gnark %v", vk.PublicAndCommitmentCommitted, wantVK.PublicAndCommitmentCommitted)
			}
			w, err := frontend.NewWitness(tc.assign, ecc.BLS12_381.ScalarField())
			if err != nil {
				t.Fatal(err)
			}
			pub, _ := w.Public()
			proof, err := groth16.Prove(ccs, pk, w)
			if err != nil {
				t.Fatal(err)
			}
			if err := groth16.Verify(proof, vk, pub); err != nil {
				t.Fatalf("gnark's proof with keygen's keys: %v", err)
			}
			// The keys survive gnark's encodings.
			var buf bytes.Buffer
			if _, err := vk.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			back := groth16.NewVerifyingKey(ecc.BLS12_381)
			if _, err := back.ReadFrom(&buf); err != nil {
				t.Fatal(err)
			}
			if err := groth16.Verify(proof, back, pub); err != nil {
				t.Fatalf("decoded verifying key: %v", err)
			}
		})
	}
}

// The commitment keys come from the reader too: the same seed, the same keys.
func TestCommitmentKeysFromReader(t *testing.T) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &circuits.WithCommitment{})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := keygen.Setup(ccs.(*cs.R1CS), nil, seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := keygen.Setup(ccs.(*cs.R1CS), nil, seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	var ea, eb bytes.Buffer
	a.WriteRawTo(&ea)
	b.WriteRawTo(&eb)
	if !bytes.Equal(ea.Bytes(), eb.Bytes()) {
		t.Fatal("same seed, different keys")
	}
}

// shortMultiplier drops the last point of every batch.
type shortMultiplier struct{ keygen.CPUMultiplier }

func (m shortMultiplier) G1(base curve.G1Affine, s []fr.Element) ([]curve.G1Affine, error) {
	p, err := m.CPUMultiplier.G1(base, s)
	return p[:len(p)-1], err
}

func TestShortMultiplierIsAnError(t *testing.T) {
	k := compile(t, "mimc", circuits.MinConstraints)
	_, _, err := keygen.Setup(k.CS, shortMultiplier{}, seeded(5))
	if err == nil || !strings.Contains(err.Error(), "points for") {
		t.Fatalf("got %v, want an error about the number of points", err)
	}
}

// gpuDevice opens the GPU, skipping without one unless CUZK_REQUIRE_GPU=1.
func gpuDevice(t testing.TB) *cuda.Device {
	t.Helper()
	d, err := cuda.Open("")
	if err != nil {
		if os.Getenv("CUZK_REQUIRE_GPU") == "1" {
			t.Fatalf("CUZK_REQUIRE_GPU=1 but no GPU backend: %v", err)
		}
		t.Skipf("no GPU backend: %v", err)
	}
	return d
}

// TestGPUKeysEqualCPUKeys: with the same toxic waste, the keys made on the
// GPU are the CPU's, byte for byte, and they prove.
func TestGPUKeysEqualCPUKeys(t *testing.T) {
	d := gpuDevice(t)
	for _, name := range circuits.Names() {
		t.Run(name, func(t *testing.T) {
			cpu := withKeys(t, name, 1)
			gpu := compile(t, name, circuits.MinConstraints)
			var err error
			gpu.PK, gpu.VK, err = keygen.Setup(gpu.CS, gpuprove.Multiplier{Device: d}, seeded(1))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(encode(t, cpu), encode(t, gpu)) {
				t.Fatal("GPU keys differ from CPU keys made with the same toxic waste")
			}
			w, _ := prover.Witness(gpu, []byte("gpu"), 0)
			if _, _, err := prover.Prove(context.Background(), gpu, prover.CPU{}, w, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkSetup times gnark's Setup and keygen's on the CPU and the GPU
// (where there is one) for the mimc circuit at the log2 sizes in
// $CUZK_KEYGEN_BENCH (default 14), e.g. CUZK_KEYGEN_BENCH=20,22 and
// CUZK_KEYGEN_BENCH_ONLY=keygen-gpu to skip the others;
// CUZK_KEYGEN_LOG=1 logs keygen's stages.
func BenchmarkSetup(b *testing.B) {
	if os.Getenv("CUZK_KEYGEN_LOG") != "" {
		slog.SetLogLoggerLevel(slog.LevelDebug)
	}
	sizes := os.Getenv("CUZK_KEYGEN_BENCH")
	if sizes == "" {
		sizes = "14"
	}
	only := os.Getenv("CUZK_KEYGEN_BENCH_ONLY")
	for _, s := range strings.Split(sizes, ",") {
		logN, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		k := compile(b, "mimc", 1<<logN)
		runs := []struct {
			name  string
			setup func() error
		}{
			{"gnark", func() error { _, _, err := groth16.Setup(k.CS); return err }},
			{"keygen-cpu", func() error { _, _, err := keygen.Setup(k.CS, keygen.CPUMultiplier{}, nil); return err }},
			{"keygen-gpu", func() error {
				_, _, err := keygen.Setup(k.CS, gpuprove.Multiplier{Device: gpuDevice(b)}, nil)
				return err
			}},
		}
		for _, r := range runs {
			if only != "" && !strings.Contains(only, r.name) {
				continue
			}
			b.Run(fmt.Sprintf("2^%d/%s", logN, r.name), func(b *testing.B) {
				b.ReportMetric(float64(k.CS.GetNbConstraints()), "constraints")
				for b.Loop() {
					if err := r.setup(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
