package store

import (
	"errors"
	"testing"
	"time"
)

// FuzzDecodeRecords decodes arbitrary payloads as checkpoint records, under
// an intact envelope (the CRC right, so the JSON and the checks behind it
// are reached) and as raw values: each is ErrCorrupt or a record that is
// valid, names the key it was read under, and encodes back to itself. A
// damaged store is reported, never decoded into a wrong partition.
func FuzzDecodeRecords(f *testing.F) {
	created := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	f.Add(encodeJob(&Job{ID: "j1", Circuit: "mimc", Constraints: 1 << 20, NumPartitions: 4, Created: created})[envelopeSize:], 0)
	f.Add(encodePart(&Partition{Job: "j1", Index: 3, State: Proved, Attempts: 1, Proof: []byte{1, 2}, Updated: created,
		Timings: map[string]time.Duration{"compute": time.Second}})[envelopeSize:], 3)
	f.Add(encodePart(&Partition{Job: "j1", Index: 0, State: Pending, Updated: created})[envelopeSize:], 0)
	f.Add([]byte(`{"job":"j1","index":-1,"state":"pending"}`), -1)
	f.Fuzz(func(t *testing.T, payload []byte, idx int) {
		for _, v := range [][]byte{envelope(payload), payload} {
			j, err := decodeJob(jobKey("j1"), v)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("decodeJob: %v, not ErrCorrupt", err)
				}
			} else {
				if j.ID != "j1" || j.validate() != nil {
					t.Fatalf("decodeJob accepted %+v", j)
				}
				back, err := decodeJob(jobKey("j1"), encodeJob(&j))
				if err != nil || back.ID != j.ID || back.NumPartitions != j.NumPartitions || back.Constraints != j.Constraints ||
					back.Priority != j.Priority || !back.Created.Equal(j.Created) {
					t.Fatalf("job %+v encodes back to %+v, %v", j, back, err)
				}
			}
			p, err := decodePart(partKey("j1", idx), v)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("decodePart: %v, not ErrCorrupt", err)
				}
				continue
			}
			if p.Job != "j1" || p.Index != idx || p.Attempts < 0 || (p.State == Proved) != (len(p.Proof) > 0) {
				t.Fatalf("decodePart under %q accepted %+v", partKey("j1", idx), p)
			}
			back, err := decodePart(partKey("j1", idx), encodePart(&p))
			if err != nil || back.State != p.State || back.Attempts != p.Attempts || string(back.Proof) != string(p.Proof) ||
				len(back.Timings) != len(p.Timings) || !back.Updated.Equal(p.Updated) {
				t.Fatalf("partition %+v encodes back to %+v, %v", p, back, err)
			}
		}
	})
}
