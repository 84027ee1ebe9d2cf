package gpuprove_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/consensys/gnark/backend/witness"
	urfave "github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/cli"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/prover"
)

// requireGPU is set on the GPU machine, where a skip would hide a failure.
var requireGPU = os.Getenv("CUZK_REQUIRE_GPU") == "1"

// openGPU opens device 0 with opt, or skips (fails under CUZK_REQUIRE_GPU=1)
// when there is no kernel library or GPU.
func openGPU(t *testing.T, opt gpuprove.Options) *gpuprove.GPUs {
	t.Helper()
	g, err := gpuprove.Open(opt)
	if err != nil {
		if requireGPU {
			t.Fatalf("CUZK_REQUIRE_GPU=1 but no GPU backend: %v", err)
		}
		if errors.Is(err, cuda.ErrUnavailable) {
			t.Skipf("no GPU backend: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return g
}

// cliRun runs the cuzk app in-process.
func cliRun(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := cli.App()
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(*urfave.Context, error) {}
	err := app.Run(append([]string{"cuzk"}, args...))
	return out.String(), errOut.String(), err
}

var (
	keysMu sync.Mutex
	keys   = map[string]*prover.Keys{}
)

func setupKeys(t *testing.T, circuit string, target int) *prover.Keys {
	t.Helper()
	keysMu.Lock()
	defer keysMu.Unlock()
	name := fmt.Sprintf("%s-%d", circuit, target)
	if k, ok := keys[name]; ok {
		return k
	}
	c, err := circuits.Lookup(circuit)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prover.Setup(c, target)
	if err != nil {
		t.Fatalf("setup %s at %d: %v", circuit, target, err)
	}
	// The key cache is keyed by the content hash, which only Save computes;
	// the directory outlives this test, for the disk tier of the others.
	if err := k.Save(gpuprove.KeyDirForTests(t)); err != nil {
		t.Fatal(err)
	}
	keys[name] = k
	return k
}

func TestOpenWithoutLibraryIsUnavailable(t *testing.T) {
	_, err := gpuprove.Open(gpuprove.Options{Library: "/nonexistent/" + cuda.LibraryName})
	if !errors.Is(err, cuda.ErrUnavailable) {
		t.Fatalf("Open of a missing library: got %v, want cuda.ErrUnavailable", err)
	}
}

// With no library, --backend auto proves on the CPU after a one-line notice,
// and --backend gpu refuses.
func TestAutoFallsBackToCPU(t *testing.T) {
	keyDir, out := t.TempDir(), t.TempDir()
	lib := "--gpu-lib=/nonexistent/" + cuda.LibraryName
	stdout, stderr, err := cliRun(t, "prove", "--circuit", "mimc", "--constraints", "1K", "--partitions", "1",
		"--backend", "auto", lib, "--keys", keyDir, "--out", out, "--setup-if-missing", "--json")
	if err != nil {
		t.Fatalf("prove --backend auto: %v\n%s", err, stderr)
	}
	notice := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "notice: no GPU backend") {
			notice++
		}
	}
	var rep struct {
		Backend  string `json:"backend"`
		Verified int    `json:"proved"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if notice != 1 || rep.Backend != "cpu" || rep.Verified != 1 {
		t.Fatalf("auto without a library: %d notices, backend %q, %d verified\n%s", notice, rep.Backend, rep.Verified, stderr)
	}
	if _, _, err := cliRun(t, "prove", "--circuit", "mimc", "--constraints", "1K", "--partitions", "1",
		"--backend", "gpu", lib, "--keys", keyDir, "--out", out); !errors.Is(err, cuda.ErrUnavailable) {
		t.Fatalf("prove --backend gpu without a library: got %v, want cuda.ErrUnavailable", err)
	}
}

// The partition buffer holds every staged vector, and the MSM scratch
// estimate grows with the MSM.
func TestFootprintCoversTheStagedVectors(t *testing.T) {
	k := setupKeys(t, "porep", 1<<10)
	pk := k.PK
	need := int64(32 * (3*int(pk.Domain.Cardinality) + len(pk.G1.A) + len(pk.G1.B) + len(pk.G1.K)))
	if got := (&gpuprove.Backend{}).Footprint(k); got < need || got > need+6*256 {
		t.Fatalf("footprint %d bytes for %d bytes of vectors", got, need)
	}
	prev := int64(0)
	for _, n := range []int{1, 1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 27} {
		s := gpuprove.MSMScratch(n)
		if s <= prev || s < 16*int64(n) {
			t.Fatalf("MSM scratch for %d points: %d bytes (previous size %d)", n, s, prev)
		}
		prev = s
	}
}

// The GPU backend's MSM sums equal the CPU backend's on the same prepared
// partition (they are deterministic), b_g2 on the device equals prover.BG2,
// and the proof it gives verifies.
func TestGPUComputeEqualsCPU(t *testing.T) {
	// The G2 MSM beside the G1 work on a second stream (the default), and
	// after it on the partition's stream.
	for _, tc := range []struct {
		name string
		opt  gpuprove.Options
	}{
		// Staged with a alone (nothing computes at stage): compute copies
		// b, c and the wires ahead, beside a's and b's NTTs.
		{"g2-beside", gpuprove.Options{BG2: true}},
		{"g2-serial", gpuprove.Options{BG2: true, SerialG2: true}},
		// The whole layout staged at once.
		{"whole-in-order", gpuprove.Options{BG2: true, CopiesInOrder: true}},
		// The resident G1 sets read through the points, not tables of them
		// (every other resident case has tables: MSMTables auto).
		{"no-msm-tables", gpuprove.Options{BG2: true, MSMTables: "off"}},
		// The keys streamed from the host in chunks of 2^11 points, through
		// the chunk buffers (pinned) or the driver's staging (Go heap).
		{"streamed-pinned", gpuprove.Options{BG2: true, KeyTier: gpuprove.TierPinned, ChunkPoints: 1 << 11}},
		{"streamed-host", gpuprove.Options{BG2: true, SerialG2: true, KeyTier: gpuprove.TierHost, ChunkPoints: 1 << 12}},
		// From the key directory's points file, through pinned staging.
		{"streamed-disk", gpuprove.Options{BG2: true, KeyTier: gpuprove.TierDisk, ChunkPoints: 1 << 11}},
		// Two vectors on the device (c and the wires copied in by compute),
		// the NTTs in place (no scratch vector), and both.
		{"compact", gpuprove.Options{BG2: true, Layout: gpuprove.LayoutCompact, CopiesInOrder: true}},
		{"ntt-in-place", gpuprove.Options{BG2: true, NTTInPlace: true}},
		{"compact-in-place-serial", gpuprove.Options{BG2: true, SerialG2: true, Layout: gpuprove.LayoutCompact, NTTInPlace: true, KeyTier: gpuprove.TierPinned, ChunkPoints: 1 << 11, CopiesInOrder: true}},
		// Compact with b and the wires copied on a copy stream beside the
		// kernels that do not read their place (the default).
		{"compact-ahead", gpuprove.Options{BG2: true, Layout: gpuprove.LayoutCompact}},
		{"compact-ahead-in-place-serial", gpuprove.Options{BG2: true, SerialG2: true, Layout: gpuprove.LayoutCompact, NTTInPlace: true, KeyTier: gpuprove.TierPinned, ChunkPoints: 1 << 11}},
	} {
		t.Run(tc.name, func(t *testing.T) { computeEqualsCPU(t, tc.opt) })
	}
}

func computeEqualsCPU(t *testing.T, opt gpuprove.Options) {
	g := openGPU(t, opt)
	if !prover.ComputesBG2(g.Backend) {
		t.Fatal("backend opened with BG2 does not compute b_g2")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		circuit string
		target  int
		// porep-sha's A and B wires are one vector (prover.Keys.SharedWires).
	}{{"mimc", 1 << 12}, {"porep", 1 << 13}, {"mimc", 1 << 14}, {"sha", 1 << 13}, {"porep-sha", 1 << 13}} {
		k := setupKeys(t, tc.circuit, tc.target)
		for part := range 2 {
			w, err := prover.Witness(k, []byte("gpu-test"), part)
			if err != nil {
				t.Fatal(err)
			}
			got, p := sumsEqualCPU(t, g.Backend, k, w, fmt.Sprintf("%s %d partition %d", tc.circuit, k.Constraints(), part))
			if _, err := prover.Finalize(k, got, got.B2, p, rand.Reader); err != nil {
				t.Fatalf("%s %d partition %d: %v", tc.circuit, k.Constraints(), part, err)
			}
			t.Logf("%s, %d constraints, partition %d: GPU sums (G1 and G2) equal the CPU's; proof verifies", tc.circuit, k.Constraints(), part)
			// The whole pipeline leaves b_g2 to Compute: no CPU time for it.
			proof, tm, err := prover.Prove(ctx, k, g.Backend, w, nil)
			if err != nil || proof == nil || tm["b_g2"] != 0 {
				t.Fatalf("%s %d partition %d: Prove with b_g2 on the device: err %v, b_g2 took %s", tc.circuit, k.Constraints(), part, err, tm["b_g2"])
			}
		}
	}
	// sha's wires are bits: the split MSMs saw ones (summed by additions)
	// as well as zeros.
	if zero, one, other := g.Backend.SplitStats(); zero == 0 || one == 0 {
		t.Errorf("split MSMs saw %d zero, %d one and %d other scalars: want zeros and ones", zero, one, other)
	} else {
		t.Logf("split MSMs: %d zero, %d one, %d other scalars", zero, one, other)
	}
	// Nothing computed when each partition staged: the whole layout's
	// staged a alone, unless in order.
	alone := gpuprove.StagedAlone(g.Backend)
	if want := opt.Layout != gpuprove.LayoutCompact && !opt.CopiesInOrder; (alone > 0) != want {
		t.Errorf("%d partitions staged with a alone; want some: %v", alone, want)
	}
	u := g.Backend.Held(0)
	t.Logf("device 0 holds: %+v", u)
	if streamed := opt.KeyTier == gpuprove.TierPinned || opt.KeyTier == gpuprove.TierHost; streamed {
		if u.Keys != 0 || u.Host <= 0 || u.Chunks <= 0 {
			t.Errorf("streamed keys: %+v", u)
		}
		return
	}
	if opt.KeyTier == gpuprove.TierDisk {
		if u.Keys != 0 || u.Host != 0 || u.Disk <= 0 || u.Staging != u.Chunks {
			t.Errorf("keys streamed from disk: %+v", u)
		}
		return
	}
	if r := g.Backend.Held(0).Keys; r <= 0 {
		t.Errorf("no key bytes resident after proving")
	}
	// The key sets of 2^13 and more have MSM tables of their G1 sets
	// (those of 2^12 are below the smallest set tabulated).
	if tables := u.MSMTables > 0; tables != (opt.MSMTables != "off") {
		t.Errorf("MSM tables %q: %d bytes of them held", opt.MSMTables, u.MSMTables)
	}
	freed, err := g.Backend.EvictIdle(0)
	if h := g.Backend.Held(0); err != nil || freed <= 0 || h.Keys != 0 || h.MSMTables != 0 {
		t.Errorf("evict: freed %d, err %v, %d still resident, %d of tables", freed, err, h.Keys, h.MSMTables)
	}
}

// Under a VRAM limit too small for a 2^20 partition's keys beside its
// buffers, the keys are streamed from pinned memory in chunks; the sums equal
// the CPU's, and a job proves and verifies under every design.
func TestStreamedKeysUnderATinyLimit(t *testing.T) {
	g := openGPU(t, gpuprove.Options{BG2: true, VRAMLimit: 1 << 30})
	keyDir := t.TempDir()
	if _, stderr, err := cliRun(t, "setup", "--circuit", "mimc", "--constraints", "1M", "--keys", keyDir, "--keygen", "gpu"); err != nil {
		t.Fatalf("setup: %v\n%s", err, stderr)
	}
	circ, err := circuits.Lookup("mimc")
	if err != nil {
		t.Fatal(err)
	}
	layout, err := circ.Layout(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prover.Load(prover.KeyDir(keyDir, "mimc", 1<<20), "mimc", layout)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Backend.Preload(k); err != nil {
		t.Fatal(err)
	}
	plan, err := g.Backend.Plan(0, k)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", plan)
	if plan.Tier == gpuprove.TierDevice || plan.ChunkPoints >= len(k.PK.G1.A) || !plan.Fits() {
		t.Fatalf("plan under a 1 GiB limit: %+v", plan)
	}
	w, err := prover.Witness(k, []byte("tiny"), 0)
	if err != nil {
		t.Fatal(err)
	}
	got, p := sumsEqualCPU(t, g.Backend, k, w, "mimc 2^20 under 1 GiB")
	if _, err := prover.Finalize(k, got, got.B2, p, rand.Reader); err != nil {
		t.Fatal(err)
	}
	g.Close()
	for _, design := range actors.Designs {
		out := t.TempDir()
		stdout, stderr, err := cliRun(t, "prove", "--backend", "gpu", "--design", design, "--workers", "3", "--vram-limit", "1GiB",
			"--circuit", "mimc", "--constraints", "1M", "--partitions", "4", "--keys", keyDir, "--out", out, "--json")
		if err != nil {
			t.Fatalf("%s: prove under 1 GiB: %v\n%s", design, err, stderr)
		}
		if !strings.Contains(stdout, `"proved": 4`) {
			t.Fatalf("%s: not every partition proved under 1 GiB:\n%s\n%s", design, stdout, stderr)
		}
		t.Logf("%s: 4/4 proved and verified with streamed keys under a 1 GiB limit", design)
	}
	// The keys loaded without their points, streamed from the points file
	// (written on this first use), which the plan names.
	stdout, stderr, err := cliRun(t, "prove", "--backend", "gpu", "--key-tier", "disk", "--vram-limit", "1GiB",
		"--circuit", "mimc", "--constraints", "1M", "--keys", keyDir, "--plan")
	if err != nil || !strings.Contains(stdout, "on disk (") {
		t.Fatalf("prove --key-tier disk --plan: %v\n%s\n%s", err, stdout, stderr)
	}
	t.Logf("\n%s", stdout)
	out := t.TempDir()
	stdout, stderr, err = cliRun(t, "prove", "--backend", "gpu", "--key-tier", "disk", "--workers", "3", "--vram-limit", "1GiB",
		"--circuit", "mimc", "--constraints", "1M", "--partitions", "4", "--keys", keyDir, "--out", out, "--json")
	if err != nil || !strings.Contains(stdout, `"proved": 4`) {
		t.Fatalf("prove --key-tier disk under 1 GiB: %v\n%s\n%s", err, stdout, stderr)
	}
	t.Log("budget: 4/4 proved and verified with keys streamed from disk under a 1 GiB limit")
}

// cuzk prove --backend gpu proves and verifies every partition under each
// lock design with three workers.
func TestProveOnGPUUnderEachDesign(t *testing.T) {
	openGPU(t, gpuprove.Options{}).Close() // skip or fail early, as the other tests
	keyDir := t.TempDir()
	for _, design := range actors.Designs {
		t.Run(design, func(t *testing.T) {
			out := t.TempDir()
			stdout, stderr, err := cliRun(t, "prove", "--backend", "gpu", "--design", design, "--workers", "3",
				"--circuit", "porep", "--constraints", "8K", "--partitions", "6", "--keys", keyDir, "--setup-if-missing",
				"--out", out, "--json", "--trace", filepath.Join(out, "trace.json"))
			if err != nil {
				t.Fatalf("prove: %v\n%s", err, stderr)
			}
			var rep struct {
				Backend    string `json:"backend"`
				Verified   int    `json:"proved"`
				Partitions []struct {
					Stages map[string]float64 `json:"stages_ms"`
				} `json:"partitions"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, stdout)
			}
			if rep.Backend != "gpu" || rep.Verified != 6 {
				t.Fatalf("design %s: backend %q, %d/6 verified\n%s", design, rep.Backend, rep.Verified, stderr)
			}
			t.Logf("design %s: 6/6 verified on the GPU; compute of partition 0 took %.1f ms", design, rep.Partitions[0].Stages["compute"])
		})
	}
}

func submit(t *testing.T, d gpu.Device, op gpu.Op) gpu.Result {
	t.Helper()
	ch := make(chan gpu.Result, 1)
	d.Submit(op, func(r gpu.Result) { ch <- r })
	return <-ch
}

// Last in the file: a failed allocation leaves CUDA's last error set, which
// older builds of the kernel library reported from the next kernel launch.
//
// The device runs the designs' operations on the real GPU; a kernel sees its
// stream's buffer; the VRAM limit makes a smaller card.
func TestDeviceOpsAndLimit(t *testing.T) {
	const limit = 2 << 30
	g := openGPU(t, gpuprove.Options{VRAMLimit: limit})
	d := g.Devices[0]
	// The ballast takes a little more than asked (0.9–2.9 MiB on the H200):
	// the limit is what it left free.
	if mi := submit(t, d, gpu.Op{Kind: gpu.OpMemInfo}); mi.Err != nil || mi.Free > limit+(64<<20) || mi.Free < limit-(256<<20) ||
		mi.Total > limit || mi.Total < limit-(16<<20) || mi.Total != g.Devices[0].Limit() {
		t.Fatalf("mem info under a %d limit: %+v", int64(limit), mi)
	}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: limit + 1<<30}); !errors.Is(r.Err, gpu.ErrOutOfMemory) {
		t.Fatalf("malloc beyond the limit: got %v, want out of memory", r.Err)
	}
	s := d.NewStream()
	r := submit(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 64 << 20})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	buf := r.Buffer
	if r := submit(t, d, gpu.Op{Kind: gpu.OpCopyIn, Stream: s, Buffer: buf, Bytes: 64 << 20}); r.Err != nil {
		t.Fatal(r.Err)
	}
	var seen gpuprove.Placement
	k := &gpu.Kernel{Partition: "test", Work: gpuprove.WorkFuncs{ComputeFunc: func(pl gpuprove.Placement) error {
		seen = pl
		return pl.Device.CUDA().Memset(pl.Buffer, 7, pl.Bytes, pl.Stream)
	}}}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpCompute, Stream: s, Kernel: k}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if seen.Buffer == 0 || seen.Bytes != 64<<20 {
		t.Fatalf("kernel placement: %+v", seen)
	}
	panicky := &gpu.Kernel{Partition: "panics", Work: gpuprove.WorkFuncs{ComputeFunc: func(gpuprove.Placement) error { panic("boom") }}}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpCompute, Stream: s, Kernel: panicky}); r.Err == nil {
		t.Fatal("a panicking kernel did not fail its op")
	}
	for _, op := range []gpu.Op{
		{Kind: gpu.OpFreeAsync, Stream: s, Buffer: buf},
		{Kind: gpu.OpStreamSync, Stream: s},
		{Kind: gpu.OpTrimPool},
		{Kind: gpu.OpDeviceSync},
	} {
		if r := submit(t, d, op); r.Err != nil {
			t.Fatalf("%s: %v", op.Kind, r.Err)
		}
	}
	ev := submit(t, d, gpu.Op{Kind: gpu.OpRecordEvent, Stream: s})
	if ev.Err != nil || ev.Event == 0 {
		t.Fatalf("record event: %+v", ev)
	}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpEventSync, Event: ev.Event}); r.Err != nil {
		t.Fatal(r.Err)
	}
	m := submit(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: 1 << 30})
	if m.Err != nil {
		t.Fatal(m.Err)
	}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpFree, Buffer: m.Buffer}); r.Err != nil {
		t.Fatal(r.Err)
	}
	h := submit(t, d, gpu.Op{Kind: gpu.OpHostAlloc, Bytes: 1 << 20})
	if h.Err != nil {
		t.Fatal(h.Err)
	}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpHostFree, Buffer: h.Buffer}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: s, Buffer: buf}); r.Err == nil {
		t.Fatal("second free of a pool buffer succeeded")
	}
}

// sumsEqualCPU synthesizes and prepares w, stages and computes it on the GPU
// backend, and checks the G1 sums (and b_g2, when the backend computed it)
// against the CPU's; it returns the GPU's result and the prepared partition.
func sumsEqualCPU(t *testing.T, b *gpuprove.Backend, k *prover.Keys, w witness.Witness, name string) (*prover.Computed, *prover.Prepared) {
	t.Helper()
	ctx := context.Background()
	sol, err := prover.Synthesize(k, w)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prover.Prep(k, sol)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Stage(ctx, k, p)
	if err != nil {
		t.Fatalf("%s: stage: %v", name, err)
	}
	got, err := b.Compute(ctx, k, st)
	st.Release()
	if err != nil {
		t.Fatalf("%s: compute: %v", name, err)
	}
	// The CPU backend clobbers a, b, c: it runs second.
	cst, _ := prover.CPU{}.Stage(ctx, k, p)
	want, err := prover.CPU{}.Compute(ctx, k, cst)
	if err != nil {
		t.Fatal(err)
	}
	if !got.A.Equal(&want.A) || !got.B1.Equal(&want.B1) || !got.K.Equal(&want.K) || !got.Z.Equal(&want.Z) {
		t.Fatalf("%s: GPU sums differ from the CPU's: A %v, B1 %v, K %v, Z %v", name,
			got.A.Equal(&want.A), got.B1.Equal(&want.B1), got.K.Equal(&want.K), got.Z.Equal(&want.Z))
	}
	if prover.ComputesBG2(b) {
		bg2, err := prover.BG2(ctx, k, p)
		if err != nil {
			t.Fatal(err)
		}
		if got.B2 == nil || !got.B2.Equal(&bg2) {
			t.Fatalf("%s: b_g2 on the device %v differs from the CPU's", name, got.B2)
		}
	}
	return got, p
}
