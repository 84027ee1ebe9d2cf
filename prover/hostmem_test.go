package prover

import "testing"

// TestHostFootprintCoversWhatAPartitionHolds checks the estimate against the
// vectors a real partition holds at the end of prep, for each circuit shape.
func TestHostFootprintCoversWhatAPartitionHolds(t *testing.T) {
	for _, name := range []string{"mimc", "sha"} {
		k := testKeys(t, name)
		w, err := Witness(k, []byte("host"), 0)
		if err != nil {
			t.Fatal(err)
		}
		sol, prep := plainPrepared(t, k, w)
		held := 32 * int64(len(sol.Wires)+len(sol.A)+len(sol.B)+len(sol.C)+
			len(prep.A)+len(prep.B)+len(prep.C)+len(prep.WiresA)+len(prep.WiresB)+len(prep.WiresK))
		got := HostFootprint(k)
		if got < held || got > 2*held {
			t.Errorf("%s: HostFootprint = %d bytes; the partition's vectors hold %d (want between them and twice them)", name, got, held)
		}
	}
}
