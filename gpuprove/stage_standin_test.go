package gpuprove

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/prover"
)

// A whole-layout partition staged while nothing computes on the device
// holds a alone after Stage's copies, and every vector at its place once
// Compute's copies ahead (copyRest) have run; staged while another
// partition computes, it holds them all at once. For keys whose A and B
// wires are one vector (porep-sha) and keys whose are not (mimc). On the
// stand-in library: the copies, not the kernels.
func TestStageAloneThenTheRest(t *testing.T) {
	for _, circuit := range []string{"mimc", "porep-sha"} {
		t.Run(circuit, func(t *testing.T) {
			c, err := circuits.Lookup(circuit)
			if err != nil {
				t.Fatal(err)
			}
			k, err := prover.Setup(c, 1<<10)
			if err != nil {
				t.Fatal(err)
			}
			cd := StandInCUDA(t, "1073741824")
			dk := standInKeys(t, cd, TierDevice, 1<<8, 1<<30, unlimited)
			b := &Backend{ahead: true, pinned: newPinnedPool(cd, 1<<30)}
			defer b.pinned.close()
			w, err := prover.Witness(k, []byte("alone"), 0)
			if err != nil {
				t.Fatal(err)
			}
			// Prepared where the solver writes (hostLayout: the wires as one
			// vector, copied vector by vector), and in the device's layout
			// (keys with commitments: one copy).
			sol, err := prover.SynthesizeOn(nil, b, k, w)
			if err != nil {
				t.Fatal(err)
			}
			wires, err := prover.PrepOn(nil, b, k, sol)
			if err != nil {
				t.Fatal(err)
			}
			defer wires.Release()
			h, err := b.pinned.get(keyLayout(k).total)
			if err != nil || h == nil {
				t.Fatalf("pinned buffer: %v", err)
			}
			sol2, err := prover.Synthesize(k, w)
			if err != nil {
				t.Fatal(err)
			}
			device, err := prover.PrepInto(k, sol2, &pinnedPrep{pool: b.pinned, h: h, l: keyLayout(k)})
			if err != nil {
				t.Fatal(err)
			}
			defer device.Release()
			for _, tc := range []struct {
				name    string
				p       *prover.Prepared
				oneCopy bool
			}{{"solver's layout", wires, false}, {"device's layout", device, true}} {
				m, ok := tc.p.Memory.(*pinnedPrep)
				if !ok {
					t.Fatalf("%s: prepared in %T, not in pinned memory", tc.name, tc.p.Memory)
				}
				if (m.l == keyLayout(k)) != tc.oneCopy {
					t.Fatalf("%s: host layout %+v", tc.name, m.l)
				}
				stageAloneThenTheRest(t, b, dk, k, tc.p, m.l)
			}
		})
	}
}

func stageAloneThenTheRest(t *testing.T, b *Backend, dk *deviceKeys, k *prover.Keys, p *prover.Prepared, host layout) {
	t.Helper()
	cd := dk.cd
	for _, computing := range []int32{0, 1} {
		s, err := cd.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		st := &staged{dk: dk, s: s, l: keyLayout(k), host: host, prep: p}
		if st.base, err = cd.MallocAsync(st.l.total, s); err != nil {
			t.Fatal(err)
		}
		// 0xff bytes are no field element's: a vector not copied shows.
		if err := cd.Memset(st.base, 0xff, st.l.total, s); err != nil {
			t.Fatal(err)
		}
		dk.computing.Store(computing)
		before := b.stagedAlone.Load()
		if err := b.stageCopies(st, p); err != nil {
			t.Fatal(err)
		}
		if want := computing == 0; st.alone != want || (b.stagedAlone.Load() > before) != want {
			t.Fatalf("%d computing: staged alone %v", computing, st.alone)
		}
		// What Stage says it copied (the device's OpCopyIn result, which
		// traces carry): a's bytes alone, else every vector.
		var all int64
		for _, v := range []hostVector{vecA, vecB, vecC, vecWiresA, vecWiresB, vecWiresK} {
			if v != vecWiresB || !st.l.oneWireVector() {
				all += int64(len(v.of(p))) * scalarBytes
			}
		}
		wantCopied := all
		if host == st.l {
			wantCopied = host.total
		}
		if st.alone {
			wantCopied = int64(len(p.A)) * scalarBytes
			if host == st.l {
				wantCopied = host.b
			}
		}
		if st.copied != wantCopied {
			t.Fatalf("%d computing: Stage says it copied %d bytes, want %d", computing, st.copied, wantCopied)
		}
		if st.alone {
			if got := readBack(t, cd, st.ptr(st.l.b), 1, s); bytes.Equal(elemBytes(got), elemBytes(p.B[:1])) {
				t.Fatal("b is on the device before Compute copied it")
			}
			r, err := st.copyRest()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.wait(restWires); err != nil {
				t.Fatal(err)
			}
			if err := r.close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, v := range []hostVector{vecA, vecB, vecC, vecWiresA, vecWiresB, vecWiresK} {
			want := v.of(p)
			got := readBack(t, cd, st.ptr(v.offset(st.l)), len(want), s)
			if !bytes.Equal(elemBytes(got), elemBytes(want)) {
				t.Fatalf("%d computing: %s on the device differs from the prepared vector", computing, vectorNames[v])
			}
		}
		if err := cd.FreeAsync(st.base, s); err != nil {
			t.Fatal(err)
		}
		if err := cd.StreamSync(s); err != nil {
			t.Fatal(err)
		}
		if err := cd.DestroyStream(s); err != nil {
			t.Fatal(err)
		}
	}
}

func readBack(t *testing.T, cd *cuda.Device, src cuda.Ptr, n int, s cuda.Stream) []fr.Element {
	t.Helper()
	v := make([]fr.Element, n)
	if err := cuda.CopyOut(cd, v, src, s); err != nil {
		t.Fatal(err)
	}
	return v
}

func elemBytes(v []fr.Element) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*fr.Bytes)
}
