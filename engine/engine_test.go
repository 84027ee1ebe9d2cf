package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/frontend/cs/scs"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/engine"
)

func setupFor(t *testing.T, c frontend.Circuit, opts ...engine.Option) *engine.Keys {
	t.Helper()
	ccs, err := engine.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	k, err := engine.Setup(context.Background(), ccs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func witnesses(t *testing.T, a ...frontend.Circuit) []witness.Witness {
	t.Helper()
	w, err := engine.Witnesses(a...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A job of a circuit with commitments (std/rangecheck): every partition's
// proof verifies with its own public inputs only, in the order given.
func TestProveAllRangeCheck(t *testing.T) {
	for _, kg := range []string{"cpu", "gnark"} {
		t.Run(kg, func(t *testing.T) {
			k := setupFor(t, &circuits.RangeCheck{}, engine.WithKeygen(kg))
			ws := witnesses(t, circuits.NewRangeCheck(3), circuits.NewRangeCheck(5), circuits.NewRangeCheck(7))
			proofs, err := engine.ProveAll(context.Background(), k, ws, engine.WithWorkers(2))
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range proofs {
				for j, w := range ws {
					pub, _ := w.Public()
					err := engine.Verify(k, p, pub)
					if (err == nil) != (i == j) {
						t.Errorf("proof %d with public inputs of %d: %v", i, j, err)
					}
				}
			}
		})
	}
}

// Keys written by Save, and gnark's own files, load back and prove.
func TestLoadKeys(t *testing.T) {
	ctx := context.Background()
	k := setupFor(t, &circuits.TableLookup{})
	w := witnesses(t, circuits.NewTableLookup(9))[0]
	pub, _ := w.Public()

	dir := t.TempDir()
	if err := k.Save(dir); err != nil {
		t.Fatal(err)
	}
	loaded, err := engine.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Prove(ctx, loaded, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Verify(k, p, pub); err != nil {
		t.Fatalf("proof with loaded keys, verified with the originals: %v", err)
	}

	r1csPath, pkPath, vkPath := writeGnarkFiles(t, k)
	g, err := engine.LoadGnarkKeys(r1csPath, pkPath, vkPath)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = engine.Prove(ctx, g, w, engine.WithGnarkSolver()); err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(p, k.VerifyingKey(), pub); err != nil {
		t.Fatal(err)
	}
}

// writeGnarkFiles writes the keys as a gnark user would: WriteTo for each.
func writeGnarkFiles(t *testing.T, k *engine.Keys) (r1csPath, pkPath, vkPath string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, wt func(f *os.File) error) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := wt(f); err != nil {
			t.Fatal(err)
		}
		return path
	}
	r1csPath = write("circuit.r1cs", func(f *os.File) error { _, err := k.ConstraintSystem().WriteTo(f); return err })
	pkPath = write("circuit.pk", func(f *os.File) error { _, err := k.ProvingKey().WriteTo(f); return err })
	vkPath = write("circuit.vk", func(f *os.File) error { _, err := k.VerifyingKey().WriteTo(f); return err })
	return r1csPath, pkPath, vkPath
}

// A hint the caller gives reaches both solvers; without it the error names it.
func TestHints(t *testing.T) {
	ctx := context.Background()
	ccs, err := engine.Compile(&cubic{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := engine.Setup(ctx, ccs)
	if err != nil {
		t.Fatal(err)
	}
	w := witnesses(t, &cubic{X: 3, Y: 35})[0]
	pub, _ := w.Public()
	for _, solver := range [][]engine.Option{nil, {engine.WithGnarkSolver()}} {
		if _, err := engine.Prove(ctx, k, w, solver...); !errors.Is(err, engine.ErrMissingHint) || !strings.Contains(err.Error(), "engine_test.cube") {
			t.Errorf("without the hint: got %v, want ErrMissingHint naming cube", err)
		}
		p, err := engine.Prove(ctx, k, w, append(solver, engine.WithHints(cube))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := engine.Verify(k, p, pub); err != nil {
			t.Fatal(err)
		}
	}
}

// Bad input gives a clear error, never a panic or a proof.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	k := setupFor(t, &circuits.WithCommitment{})
	good := witnesses(t, &circuits.WithCommitment{X: 3, Y: 9})[0]

	t.Run("plonk system", func(t *testing.T) {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), scs.NewBuilder, &cubic{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Setup(ctx, ccs); !errors.Is(err, engine.ErrNotGroth16) || !strings.Contains(err.Error(), "r1cs.NewBuilder") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("another curve", func(t *testing.T) {
		ccs, err := frontend.Compile(ecc.BN254.ScalarField(), r1cs.NewBuilder, &cubic{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Setup(ctx, ccs); !errors.Is(err, engine.ErrNotGroth16) || !strings.Contains(err.Error(), "bn254") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("witness of another field", func(t *testing.T) {
		w, err := frontend.NewWitness(&circuits.WithCommitment{X: 3, Y: 9}, ecc.BN254.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Prove(ctx, k, w); !errors.Is(err, engine.ErrBadWitness) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("witness of another circuit", func(t *testing.T) {
		w := witnesses(t, circuits.NewTableLookup(1))[0]
		if _, err := engine.Prove(ctx, k, w); !errors.Is(err, engine.ErrBadWitness) || !strings.Contains(err.Error(), "the circuit takes 2") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("unsatisfied", func(t *testing.T) {
		w := witnesses(t, &circuits.WithCommitment{X: 3, Y: 10})[0]
		for _, solver := range [][]engine.Option{nil, {engine.WithGnarkSolver()}} {
			if _, err := engine.Prove(ctx, k, w, solver...); !errors.Is(err, engine.ErrUnsatisfied) || !strings.Contains(err.Error(), "constraint #") {
				t.Errorf("got %v, want ErrUnsatisfied naming the constraint", err)
			}
		}
	})
	t.Run("lookup out of its table", func(t *testing.T) {
		lk := setupFor(t, &circuits.TableLookup{})
		a := circuits.NewTableLookup(1)
		a.Indices[0] = 99
		if _, err := engine.Prove(ctx, lk, witnesses(t, a)[0]); !errors.Is(err, engine.ErrUnsatisfied) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("keys of another circuit", func(t *testing.T) {
		other := setupFor(t, &cubic{})
		if _, err := engine.NewKeys(k.ConstraintSystem(), other.ProvingKey(), other.VerifyingKey()); err == nil || !strings.Contains(err.Error(), "another circuit") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("files not what they claim", func(t *testing.T) {
		r1csPath, pkPath, vkPath := writeGnarkFiles(t, k)
		garbage := filepath.Join(filepath.Dir(r1csPath), "garbage")
		os.WriteFile(garbage, []byte(strings.Repeat("\xff", 64)), 0o644)
		b, _ := os.ReadFile(pkPath)
		truncated := filepath.Join(filepath.Dir(pkPath), "truncated.pk")
		os.WriteFile(truncated, b[:len(b)/2], 0o644)
		before := listing(t, filepath.Dir(r1csPath))
		for _, tc := range []struct{ r1cs, pk, vk, blame string }{
			{vkPath, pkPath, vkPath, vkPath},   // a verifying key given as the R1CS
			{garbage, pkPath, vkPath, garbage}, // not gnark's at all
			{r1csPath, truncated, vkPath, truncated},
			{r1csPath, vkPath, vkPath, vkPath}, // a verifying key given as the proving key
			{r1csPath, pkPath, r1csPath, r1csPath},
			{r1csPath, pkPath, filepath.Join(filepath.Dir(vkPath), "missing"), "missing"},
		} {
			if _, err := engine.LoadGnarkKeys(tc.r1cs, tc.pk, tc.vk); err == nil || !strings.Contains(err.Error(), tc.blame) {
				t.Errorf("LoadGnarkKeys(%s, %s, %s): got %v, want an error naming %s", tc.r1cs, tc.pk, tc.vk, err, tc.blame)
			}
		}
		if after := listing(t, filepath.Dir(r1csPath)); after != before {
			t.Errorf("loading wrote files: %s, then %s", before, after)
		}
	})
	// The good witness still proves: nothing above left state behind.
	p, err := engine.Prove(ctx, k, good)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := good.Public()
	if err := engine.Verify(k, p, pub); err != nil {
		t.Fatal(err)
	}
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		info, _ := e.Info()
		names = append(names, e.Name()+":"+info.ModTime().String())
	}
	return strings.Join(names, ",")
}

// Without the kernel library the GPU backend is a clear error, and auto
// falls back to the CPU.
func TestGPUUnavailable(t *testing.T) {
	t.Setenv("CUZK_GPU_LIB", filepath.Join(t.TempDir(), "no-such-library.so"))
	ctx := context.Background()
	k := setupFor(t, &circuits.WithCommitment{})
	w := witnesses(t, &circuits.WithCommitment{X: 3, Y: 9})[0]
	if _, err := engine.Prove(ctx, k, w, engine.WithBackend(engine.BackendGPU), engine.WithLibrary(filepath.Join(t.TempDir(), "none.so"))); !errors.Is(err, cuda.ErrUnavailable) {
		t.Errorf("gpu: got %v, want cuda.ErrUnavailable", err)
	}
	if _, err := engine.Prove(ctx, k, w, engine.WithBackend(engine.BackendAuto), engine.WithLibrary(filepath.Join(t.TempDir(), "none.so"))); err != nil {
		t.Errorf("auto: %v", err)
	}
	if _, err := engine.Prove(ctx, k, w, engine.WithBackend("tpu")); err == nil || !strings.Contains(err.Error(), "tpu") {
		t.Errorf("unknown backend: got %v", err)
	}
}

// On a GPU (CUZK_REQUIRE_GPU=1 on the GPU machine; skipped elsewhere), a
// job of a circuit with commitments proves on the device and verifies.
func TestProveAllOnGPU(t *testing.T) {
	g, err := engine.OpenGPU("")
	if err != nil {
		if os.Getenv("CUZK_REQUIRE_GPU") != "1" && errors.Is(err, cuda.ErrUnavailable) {
			t.Skipf("no GPU: %v", err)
		}
		t.Fatal(err)
	}
	defer g.Close()
	k := setupFor(t, &circuits.RangeCheck{})
	ws := witnesses(t, circuits.NewRangeCheck(3), circuits.NewRangeCheck(5), circuits.NewRangeCheck(7))
	for _, opt := range []engine.Option{engine.WithProverBackend(g.Backend), engine.WithBackend(engine.BackendGPU)} {
		proofs, err := engine.ProveAll(context.Background(), k, ws, opt, engine.WithWorkers(2))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range proofs {
			pub, _ := ws[i].Public()
			if err := engine.Verify(k, p, pub); err != nil {
				t.Fatalf("partition %d: %v", i, err)
			}
		}
	}
}

// ProveAll runs through the actors under every lock design, with the
// caller's hint, and the first partition that fails stops the job, named.
func TestProveAllUnderEachDesign(t *testing.T) {
	ctx := context.Background()
	ccs, err := engine.Compile(&cubic{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := engine.Setup(ctx, ccs)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := engine.Witnesses(&cubic{X: 3, Y: 35}, &cubic{X: 2, Y: 15}, &cubic{X: 4, Y: 73})
	if err != nil {
		t.Fatal(err)
	}
	for _, design := range []string{"single", "split-devsync", "split", "budget"} {
		proofs, err := engine.ProveAll(ctx, k, ws, engine.WithDesign(design), engine.WithWorkers(2), engine.WithHints(cube))
		if err != nil || len(proofs) != 3 {
			t.Fatalf("%s: %d proofs, %v", design, len(proofs), err)
		}
		for i, p := range proofs {
			pub, _ := ws[i].Public()
			if err := engine.Verify(k, p, pub); err != nil {
				t.Errorf("%s: partition %d: %v", design, i, err)
			}
		}
	}
	bad, err := engine.Witnesses(&cubic{X: 3, Y: 35}, &cubic{X: 2, Y: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.ProveAll(ctx, k, bad, engine.WithHints(cube)); err == nil || !strings.Contains(err.Error(), "partition 1") {
		t.Errorf("a job with an unsatisfied witness: %v, want an error naming partition 1", err)
	}
	if _, err := engine.ProveAll(ctx, k, ws, engine.WithDesign("nope"), engine.WithHints(cube)); err == nil {
		t.Error("an unknown design was accepted")
	}
}
