package gpuprove

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/backend/groth16"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/prover"
)

var (
	savedMu   sync.Mutex
	savedKeys = map[string]*prover.Keys{}
)

// dirKeys are keys of circuit at target saved to a directory (the disk tier
// streams the directory's points file), set up once for the package's
// tests.
func dirKeys(t *testing.T, circuit string, target int) *prover.Keys {
	t.Helper()
	savedMu.Lock()
	defer savedMu.Unlock()
	name := fmt.Sprintf("%s-%d", circuit, target)
	if k, ok := savedKeys[name]; ok {
		return k
	}
	c, err := circuits.Lookup(circuit)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prover.Setup(c, target)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Save(KeyDirForTests(t)); err != nil {
		t.Fatal(err)
	}
	savedKeys[name] = k
	return k
}

var (
	keyDirsMu sync.Mutex
	keyDirs   []string
)

// KeyDirForTests is a directory for keys that outlives the test that makes
// it, for the package's tests that keep keys for the others (the disk tier
// streams from the directory's points file); TestMain removes it.
// Exported for the package's external tests.
func KeyDirForTests(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cuzk-gpuprove-keys-")
	if err != nil {
		t.Fatal(err)
	}
	keyDirsMu.Lock()
	defer keyDirsMu.Unlock()
	keyDirs = append(keyDirs, dir)
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range keyDirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// standInKeys is a deviceKeys on the stand-in library, planning with the
// package's estimates (the stand-in has no sizing calls), b_g2 on the device
// after the G1 MSMs, every MSM in chunks of chunk points.
func standInKeys(t *testing.T, cd *cuda.Device, tier string, chunk int, pinned, host int64) *deviceKeys {
	t.Helper()
	dk, err := newDeviceKeys(cd, true, false, false, planOptions{tier: tier, beside: 2, chunkPoints: chunk},
		&budget{max: pinned}, &budget{max: host})
	if err != nil {
		t.Fatal(err)
	}
	dk.estimate = true
	return dk
}

func place(dk *deviceKeys, k *prover.Keys) (*resident, error) {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	return dk.loadLocked(k)
}

// cpuMSM stands in for the kernel library's MSM, which the stand-in lacks:
// it reads the chunk's points and scalars back from the device and sums
// them with gnark-crypto, so that chunkedMSM's streaming is what is tested.
func cpuMSM[P any, J any](t *testing.T, cd *cuda.Device, s cuda.Stream, msm func(*J, []P, []fr.Element) error) msmFunc[J] {
	return func(points, scalars cuda.Ptr, n int) (J, cuda.MSMStats, error) {
		var sum J
		pts, sc := make([]P, n), make([]fr.Element, n)
		if err := cuda.CopyOut(cd, pts, points, s); err != nil {
			return sum, cuda.MSMStats{}, err
		}
		if err := cuda.CopyOut(cd, sc, scalars, s); err != nil {
			return sum, cuda.MSMStats{}, err
		}
		return sum, cuda.MSMStats{Other: n}, msm(&sum, pts, sc)
	}
}

// partitionSums runs a partition's four G1 MSMs and b_g2 over r's points as
// Compute does (chunkedMSM, the device's chunk pairs), the MSM itself on the
// host: the scalars are p's wires and H in the device's natural order.
func partitionSums(t *testing.T, dk *deviceKeys, r *resident, k *prover.Keys, p *prover.Prepared) (*prover.Computed, error) {
	t.Helper()
	cd := dk.cd
	s, err := cd.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer cd.DestroyStream(s)
	a, b, c := append([]fr.Element(nil), p.A...), append([]fr.Element(nil), p.B...), append([]fr.Element(nil), p.C...)
	h := prover.ComputeH(a, b, c, &k.PK.Domain)
	fft.BitReverse(h) // the CPU's H is bit-reversed, the device's natural
	g1 := cpuMSM(t, cd, s, func(j *curve.G1Jac, pts []curve.G1Affine, sc []fr.Element) error {
		_, err := j.MultiExp(pts, sc, ecc.MultiExpConfig{})
		return err
	})
	g2 := cpuMSM(t, cd, s, func(j *curve.G2Jac, pts []curve.G2Affine, sc []fr.Element) error {
		_, err := j.MultiExp(pts, sc, ecc.MultiExpConfig{})
		return err
	})
	var out prover.Computed
	for _, m := range []struct {
		dst     *curve.G1Jac
		points  *pointSet
		scalars []fr.Element
	}{{&out.Z, &r.z, h[:r.z.n]}, {&out.A, &r.a, p.WiresA}, {&out.B1, &r.b, p.WiresB}, {&out.K, &r.k, p.WiresK}} {
		sc, err := cuda.Upload(cd, m.scalars, s)
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := chunkedMSM(cd, m.points, sc, r.plan.ChunkPoints, &dk.chunkG1, g1, addG1)
		cd.Free(sc)
		if err != nil {
			return nil, err
		}
		*m.dst = sum
	}
	sc, err := cuda.Upload(cd, p.WiresB, s)
	if err != nil {
		t.Fatal(err)
	}
	defer cd.Free(sc)
	b2, _, err := chunkedMSM(cd, &r.g2, sc, r.plan.ChunkPoints, &dk.chunkG2, g2, addG2)
	if err != nil {
		return nil, err
	}
	out.B2 = &b2
	return &out, nil
}

// A partition proved with its keys streamed from disk has the sums of every
// other tier, point for point, and so the same proof for the same r and s,
// which gnark verifies; for keys in memory and for keys loaded without their
// points (every tier then reads the points file). The disk tier holds the
// staging on the host and nothing else, and the device what the ledger
// says.
func TestDiskTierProvesAsTheOtherTiers(t *testing.T) {
	mem := dirKeys(t, "mimc", 1<<10)
	lean, err := prover.LoadWith(mem.Dir, "mimc", mem.Layout, prover.LoadOptions{PointsOnDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lean.Points.Close()
	w, err := prover.Witness(mem, []byte("disk tier"), 0)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := prover.Synthesize(mem, w)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prover.Prep(mem, sol)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := w.Public()
	if err != nil {
		t.Fatal(err)
	}
	rnd := bytes.Repeat([]byte("r and s, the same for every tier"), 8)
	var first []byte
	const chunk = 1 << 8 // four chunks a vector: the pipeline's every step
	for _, keys := range []struct {
		name string
		k    *prover.Keys
	}{{"in memory", mem}, {"loaded without points", lean}} {
		for _, tier := range []string{TierDevice, TierPinned, TierHost, TierDisk} {
			t.Run(keys.name+"/"+tier, func(t *testing.T) {
				cd := StandInCUDA(t, "1073741824")
				start := freeOn(t, cd)
				dk := standInKeys(t, cd, tier, chunk, 1<<30, unlimited)
				r, err := place(dk, keys.k)
				if err != nil {
					t.Fatal(err)
				}
				if r.plan.Tier != tier || r.plan.ChunkPoints != chunk {
					t.Fatalf("placed at tier %s in chunks of %d, want %s, %d", r.plan.Tier, r.plan.ChunkPoints, tier, chunk)
				}
				got, err := partitionSums(t, dk, r, keys.k, p)
				if err != nil {
					t.Fatal(err)
				}
				proof, err := prover.Finalize(keys.k, got, got.B2, p, bytes.NewReader(rnd))
				if err != nil {
					t.Fatalf("the proof does not verify: %v", err)
				}
				if err := groth16.Verify(proof, mem.VK, pub); err != nil {
					t.Fatalf("gnark rejects the proof: %v", err)
				}
				var buf bytes.Buffer
				if _, err := proof.WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = buf.Bytes()
				} else if !bytes.Equal(first, buf.Bytes()) {
					t.Fatalf("the proof differs from the first tier's")
				}
				u := dk.usage()
				keyBytes := keys.k.Counts().Bytes(true)
				switch tier {
				case TierDisk:
					want := 2 * (int64(chunk)*pointBytes + int64(chunk)*g2PointBytes)
					if u.Disk != keyBytes || u.Host != 0 || u.Keys != 0 || u.Staging != want || u.Chunks != want ||
						r.plan.Staging != want || !r.plan.StagingPinned || dk.pinned.left() != 1<<30-want {
						t.Fatalf("disk tier holds %+v; plan %+v; pinned left %d", u, r.plan, dk.pinned.left())
					}
					if !strings.Contains(r.plan.String(), "on disk ("+filepath.Join(mem.Dir, prover.PointsFileName)+")") {
						t.Fatalf("the plan does not say where the points are:\n%s", r.plan)
					}
					t.Logf("\n%s", r.plan)
				case TierDevice:
					if u.Keys != keyBytes || u.Host+u.Disk+u.Staging != 0 {
						t.Fatalf("device tier holds %+v", u)
					}
				default:
					if u.Host != keyBytes || u.Keys+u.Disk+u.Staging != 0 {
						t.Fatalf("%s tier holds %+v", tier, u)
					}
				}
				if used := start - freeOn(t, cd); used != dk.reserved() {
					t.Fatalf("the device lost %d bytes, the ledger counts %d", used, dk.reserved())
				}
				if err := dk.close(); err != nil {
					t.Fatal(err)
				}
				if dk.pinned.held != 0 || dk.host.held != 0 || freeOn(t, cd) != start {
					t.Fatalf("after close: %d pinned and %d host bytes held, %d device bytes lost", dk.pinned.held, dk.host.held, start-freeOn(t, cd))
				}
			})
		}
	}
}

// Keys loaded without their points take the disk tier when the host budget
// for keys cannot hold a copy of them, and the pinned or the host tier when it
// can; staging goes to the Go heap when the pinned budget is spent.
func TestDiskTierWhenTheHostBudgetIsShort(t *testing.T) {
	mem := dirKeys(t, "mimc", 1<<10)
	lean, err := prover.LoadWith(mem.Dir, "mimc", mem.Layout, prover.LoadOptions{PointsOnDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lean.Points.Close()
	keyBytes := lean.Counts().Bytes(true)
	for _, c := range []struct {
		name         string
		k            *prover.Keys
		pinned, host int64
		tier         string
		stagingPin   bool
	}{
		{"room for a pinned copy", lean, 1 << 30, keyBytes, TierPinned, false},
		{"room in the heap only", lean, keyBytes - 1, keyBytes, TierHost, false},
		{"no room", lean, 1 << 30, keyBytes - 1, TierDisk, true},
		{"no room, no pinned memory", lean, -1, keyBytes - 1, TierDisk, false},
		{"points in memory already", mem, 1 << 30, keyBytes - 1, TierHost, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A device with room for a partition beside the chunk buffers,
			// not beside the points.
			const chunk = 1 << 8
			s := shapeOf(c.k, true, false, false)
			streamed := planFor(s, 1<<40, planOptions{tier: TierDisk, beside: 1, chunkPoints: chunk}, estimatedSizes{})
			if s.keyBytes()-streamed.Chunks < 1<<10 {
				t.Fatalf("the points (%d bytes) are not larger than the chunk buffers (%d)", s.keyBytes(), streamed.Chunks)
			}
			cd := StandInCUDA(t, fmt.Sprint(streamed.Reserved()+streamed.Partition+1<<10))
			dk := standInKeys(t, cd, "auto", chunk, c.pinned, c.host)
			dk.planOpt.beside = 1
			r, err := place(dk, c.k)
			if err != nil {
				t.Fatal(err)
			}
			defer dk.close()
			if r.plan.Tier != c.tier || (c.tier == TierDisk && r.plan.StagingPinned != c.stagingPin) {
				t.Fatalf("tier %s (staging pinned %v), want %s (%v)\n%s", r.plan.Tier, r.plan.StagingPinned, c.tier, c.stagingPin, r.plan)
			}
			if c.tier == TierDisk && (dk.chunkG1.stage[0].pin != nil) != c.stagingPin {
				t.Fatalf("staging pinned %v, want %v", dk.chunkG1.stage[0].pin != nil, c.stagingPin)
			}
		})
	}
}

// A points file cut short or corrupt is an error that names it: when the
// key set is placed (a header that does not check out), or from the MSM
// that reads the block; never a panic, and the pair is usable after.
func TestDiskTierCorruptPointsFile(t *testing.T) {
	src := dirKeys(t, "mimc", 1<<10)
	dir := t.TempDir()
	for _, f := range []string{"manifest.json", "circuit.r1cs", "proving.key", "verifying.key"} {
		b, err := os.ReadFile(filepath.Join(src.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := &prover.Keys{Circuit: src.Circuit, Layout: src.Layout, CS: src.CS, PK: src.PK, VK: src.VK, Hash: src.Hash, Dir: dir}
	pts, err := prover.EnsurePoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	pts.Close()
	path := filepath.Join(dir, prover.PointsFileName)
	good, _ := os.ReadFile(path)
	cd := StandInCUDA(t, "1073741824")

	os.WriteFile(path, good[:len(good)-4096], 0o644)
	dk := standInKeys(t, cd, TierDisk, 1<<8, 1<<30, unlimited)
	if _, err := place(dk, k); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("placing keys with a truncated points file: %v", err)
	}
	if len(dk.keys) != 0 || dk.pinned.held != 0 {
		t.Fatalf("a failed placement keeps %d key sets, %d pinned bytes", len(dk.keys), dk.pinned.held)
	}

	// One bit of K's second chunk flipped.
	bad := bytes.Clone(good)
	off := int64(0)
	for i := range 5 {
		if sec := good[64+32*i:]; string(bytes.TrimRight(sec[:8], "\x00")) == "K" {
			off = int64(binary.LittleEndian.Uint64(sec[24:]))
		}
	}
	bad[off+300*pointBytes] ^= 1
	os.WriteFile(path, bad, 0o644)
	r, err := place(dk, k)
	if err != nil {
		t.Fatal(err)
	}
	defer dk.close()
	w, _ := prover.Witness(k, []byte("corrupt"), 0)
	sol, _ := prover.Synthesize(k, w)
	p, _ := prover.Prep(k, sol)
	if _, err := partitionSums(t, dk, r, k, p); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "section K, block 0") {
		t.Fatalf("an MSM over a corrupt block: %v", err)
	}
	// The pairs are not left locked or mid-copy: the next partition
	// streams Z, A and B again, and fails at K again.
	if _, err := partitionSums(t, dk, r, k, p); err == nil {
		t.Fatal("the corrupt block passed the second time")
	}
}
