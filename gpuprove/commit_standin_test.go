package gpuprove

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
)

// StandInCUDA is device 0 of the stand-in kernel library
// (cuda/testdata/fakegpu.c): host memory behind the C ABI with an exact
// ledger, streams, no kernels and no sizing calls. Exported for the
// package's external tests.
func StandInCUDA(t *testing.T, capacity string) *cuda.Device {
	t.Helper()
	lib, err := cuda.BuildStandIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUZK_FAKE_GPU_BYTES", capacity)
	l, err := cuda.Load(lib)
	if err != nil {
		t.Fatal(err)
	}
	cd, err := l.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	return cd
}

// RealCUDA is device 0 of the kernel library found as cuda.Load finds it:
// skipped where there is none, a failure instead under CUZK_REQUIRE_GPU=1.
// Exported for the package's external tests.
func RealCUDA(t *testing.T) *cuda.Device {
	t.Helper()
	lib, err := cuda.Load("")
	var cd *cuda.Device
	if err == nil {
		cd, err = lib.Device(0)
	}
	if err != nil {
		if os.Getenv("CUZK_REQUIRE_GPU") == "1" {
			t.Fatalf("CUZK_REQUIRE_GPU=1 but no GPU backend: %v", err)
		}
		if errors.Is(err, cuda.ErrUnavailable) {
			t.Skipf("no GPU backend: %v", err)
		}
		t.Fatal(err)
	}
	return cd
}

func rangeCheckKeys(t *testing.T) *prover.Keys {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &circuits.RangeCheck{})
	if err != nil {
		t.Fatal(err)
	}
	r := ccs.(*cs.R1CS)
	pk, vk, err := keygen.Setup(r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pk.CommitmentKeys) == 0 {
		t.Fatal("rangecheck has no commitments: the test proves nothing")
	}
	return &prover.Keys{Circuit: "rangecheck", CS: r, PK: pk, VK: vk, Hash: "rangecheck-standin"}
}

// freeOn is the memory the stand-in's ledger has free.
func freeOn(t *testing.T, cd *cuda.Device) int64 {
	t.Helper()
	free, _, err := cd.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	return free
}

// TestCommitmentBasesAreInTheLedger places a key set with commitments on the
// stand-in, as a key set is placed (its plan made with the package's
// estimates, which the stand-in's missing sizing calls leave): the bases and
// the commitment MSMs' buffer are allocated then, every byte of them in the
// plan, in Held and in what the designs are told is reserved, and given back
// by eviction and close. The MSM that the stand-in cannot run is an error
// returned to the caller, twice (the buffer's mutex is given back), and a
// key set without commitments takes no memory and no stream.
func TestCommitmentBasesAreInTheLedger(t *testing.T) {
	cd := StandInCUDA(t, "268435456")
	k := rangeCheckKeys(t)
	start := freeOn(t, cd)
	dk, err := newDeviceKeys(cd, false, false, true, planOptions{beside: 2}, &budget{max: 1 << 30}, &budget{max: unlimited})
	if err != nil {
		t.Fatal(err)
	}
	points := 0
	for _, ck := range k.PK.CommitmentKeys {
		points += len(ck.Basis)
	}
	p := planFor(shapeOf(k, false, false, true), start, dk.planOpt, estimatedSizes{})
	if p.Commitments != 2*int64(points)*pointBytes || p.CommitScratch <= commitScalarBytes(p.CommitChunk) || p.CommitChunk != points {
		t.Fatalf("plan: commitment bases %d bytes, buffer %d, chunk %d; want %d bytes, a buffer beyond the scalars, %d points",
			p.Commitments, p.CommitScratch, p.CommitChunk, 2*points*pointBytes, points)
	}
	if p.Reserved() != p.Keys+p.Chunks+p.Scratch+p.Tables+p.Commitments+p.CommitScratch {
		t.Fatalf("the plan's reserved %d leaves out the commitments", p.Reserved())
	}
	if s := p.String(); !strings.Contains(s, "commitment bases") || !strings.Contains(s, "commitment scratch") {
		t.Fatalf("the plan does not show the commitments:\n%s", s)
	}
	t.Logf("\n%s", p)

	r := &resident{hash: k.Hash, plan: p}
	dk.mu.Lock()
	err = dk.placeCommitments(k, r)
	if err == nil {
		dk.keys[k.Hash] = r
	}
	dk.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	held := dk.usage()
	if held.Commitments != p.Commitments || held.Scratch != p.CommitScratch || dk.reserved() != p.Commitments+p.CommitScratch {
		t.Fatalf("held %+v, reserved %d; the plan has %d of bases and %d of buffer", held, dk.reserved(), p.Commitments, p.CommitScratch)
	}
	if used := start - freeOn(t, cd); used != dk.reserved() {
		t.Fatalf("the device lost %d bytes, the ledger counts %d", used, dk.reserved())
	}
	if dk.commits.stream == 0 {
		t.Fatal("no stream of their own for the commitment MSMs")
	}

	for range 2 {
		scalars := make([]fr.Element, r.cm.of(0).n)
		_, err := dk.commits.msm(cd, r.cm.of(0), scalars, p.CommitChunk)
		var ce *cuda.Error
		if !errors.As(err, &ce) || !strings.Contains(ce.Op, "msm") {
			t.Fatalf("the stand-in's MSM gave %v, want the library's error", err)
		}
	}
	if _, err := dk.commits.msm(cd, r.cm.sigma, make([]fr.Element, 1), p.CommitChunk); err == nil {
		t.Fatal("an MSM of 1 scalar over all the σ-bases ran")
	}

	if _, err := dk.evictIdle(0); err != nil {
		t.Fatal(err)
	}
	if held := dk.usage(); held.Commitments != 0 || start-freeOn(t, cd) != held.Scratch {
		t.Fatalf("after eviction: held %+v, %d bytes used", held, start-freeOn(t, cd))
	}
	if err := dk.close(); err != nil {
		t.Fatal(err)
	}
	if used := start - freeOn(t, cd); used != 0 {
		t.Fatalf("%d bytes left on the device after close", used)
	}

	// Without commitments: no bases, no buffer, no stream.
	bare := &prover.Keys{Circuit: "bare", CS: k.CS, PK: k.PK, VK: k.VK, Hash: "bare"}
	pk := *k.PK
	pk.CommitmentKeys = nil
	bare.PK = &pk
	dk2, err := newDeviceKeys(cd, false, false, true, planOptions{beside: 2}, &budget{max: 1 << 30}, &budget{max: unlimited})
	if err != nil {
		t.Fatal(err)
	}
	defer dk2.close()
	p2 := planFor(shapeOf(bare, false, false, true), start, dk2.planOpt, estimatedSizes{})
	if p2.Commitments != 0 || p2.CommitScratch != 0 || strings.Contains(p2.String(), "commitment") {
		t.Fatalf("a plan without commitments reserves %d and %d for them:\n%s", p2.Commitments, p2.CommitScratch, p2)
	}
	r2 := &resident{hash: bare.Hash, plan: p2}
	dk2.mu.Lock()
	err = dk2.placeCommitments(bare, r2)
	dk2.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if dk2.commits.stream != 0 || dk2.usage().Commitments != 0 || dk2.usage().Scratch != 0 || start-freeOn(t, cd) != 0 {
		t.Fatalf("a key set without commitments took a stream %d, held %+v, %d bytes", dk2.commits.stream, dk2.usage(), start-freeOn(t, cd))
	}
}

// TestCommitmentMSMFailureIsAnError asks a backend over the stand-in for the
// commitments of a solve: the stand-in cannot size an MSM, so placing the
// key set fails, and that failure is what synthesis returns (no panic, no
// sum on the host), with no device MSM counted.
func TestCommitmentMSMFailureIsAnError(t *testing.T) {
	cd := StandInCUDA(t, "268435456")
	b, err := NewBackend([]*cuda.Device{cd}, BackendOptions{PinnedLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if prover.CapabilitiesOf(b).Commitments == nil {
		t.Fatal("the GPU backend does not offer its commitment MSMs")
	}
	k := rangeCheckKeys(t)
	full, err := frontend.NewWitness(circuits.NewRangeCheck(1000003), ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	_, err = prover.SynthesizeFor(b, k, full)
	var ce *cuda.Error
	if !errors.As(err, &ce) || errors.Is(err, prover.ErrUnsatisfied) {
		t.Fatalf("synthesis on a device that cannot place the keys: %v, want the library's error", err)
	}
	if n := b.CommitmentMSMs(); n != 0 {
		t.Fatalf("%d device commitment MSMs counted, none ran", n)
	}
	// The host still proves it, given no backend.
	if _, err := prover.Synthesize(k, full); err != nil {
		t.Fatal(err)
	}
}
