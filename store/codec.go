package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"time"
)

// Every value but the schema key's is an envelope:
//
//	byte 0     value format version (formatV1)
//	bytes 1-4  CRC-32C (Castagnoli) of the payload, little-endian
//	bytes 5-   payload: JSON for job and partition records, raw bytes for inputs
//
// Pebble checksums its own blocks; the CRC here covers the path from encoding
// to decoding, so a value damaged anywhere is reported as ErrCorrupt rather
// than decoded into a wrong proof.
const (
	formatV1     byte = 1
	envelopeSize      = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func envelope(payload []byte) []byte {
	v := make([]byte, envelopeSize, envelopeSize+len(payload))
	v[0] = formatV1
	binary.LittleEndian.PutUint32(v[1:5], crc32.Checksum(payload, castagnoli))
	return append(v, payload...)
}

// openEnvelope checks v and returns a copy of its payload (v may belong to
// Pebble and be reused once its closer is closed).
func openEnvelope(key, v []byte) ([]byte, error) {
	if len(v) < envelopeSize {
		return nil, fmt.Errorf("value of %q: %d bytes, shorter than its header: %w", key, len(v), ErrCorrupt)
	}
	if v[0] != formatV1 {
		return nil, fmt.Errorf("value of %q: unknown value format %d: %w", key, v[0], ErrCorrupt)
	}
	payload := v[envelopeSize:]
	if want, got := binary.LittleEndian.Uint32(v[1:5]), crc32.Checksum(payload, castagnoli); want != got {
		return nil, fmt.Errorf("value of %q: checksum %08x, want %08x: %w", key, got, want, ErrCorrupt)
	}
	return append([]byte(nil), payload...), nil
}

// jobRecord is the JSON payload of j/<id>. Inputs live in keys of their own:
// they may be large, and listing jobs should not read them.
type jobRecord struct {
	ID            string            `json:"id"`
	Circuit       string            `json:"circuit"`
	Constraints   int64             `json:"constraints"`
	KeyHash       string            `json:"key_hash"`
	NumPartitions int               `json:"partitions"`
	Priority      string            `json:"priority"`
	Created       time.Time         `json:"created"`
	Params        map[string]string `json:"params,omitempty"`
}

// partRecord is the JSON payload of j/<id>/p/<index>. The job and index are
// in the key; they are repeated here so that a record copied under the wrong
// key is caught.
type partRecord struct {
	Job       string           `json:"job"`
	Index     int              `json:"index"`
	State     string           `json:"state"`
	Attempts  int              `json:"attempts"`
	LastError string           `json:"last_error,omitempty"`
	TimingsNS map[string]int64 `json:"timings_ns,omitempty"`
	Updated   time.Time        `json:"updated"`
	Proof     []byte           `json:"proof,omitempty"`
	Public    []byte           `json:"public,omitempty"`
}

func encodeJob(j *Job) []byte {
	b, err := json.Marshal(jobRecord{
		ID: j.ID, Circuit: j.Circuit, Constraints: j.Constraints, KeyHash: j.KeyHash,
		NumPartitions: j.NumPartitions, Priority: j.Priority.String(), Created: j.Created.UTC(),
		Params: j.Params,
	})
	if err != nil {
		panic(fmt.Sprintf("store: encode job %s: %v", j.ID, err)) // plain types always marshal
	}
	return envelope(b)
}

func decodeJob(key, v []byte) (Job, error) {
	payload, err := openEnvelope(key, v)
	if err != nil {
		return Job{}, err
	}
	var r jobRecord
	if err := json.Unmarshal(payload, &r); err != nil {
		return Job{}, fmt.Errorf("value of %q: %v: %w", key, err, ErrCorrupt)
	}
	prio, err := ParsePriority(r.Priority)
	if err != nil {
		return Job{}, fmt.Errorf("value of %q: %v: %w", key, err, ErrCorrupt)
	}
	j := Job{
		ID: r.ID, Circuit: r.Circuit, Constraints: r.Constraints, KeyHash: r.KeyHash,
		NumPartitions: r.NumPartitions, Priority: prio, Created: r.Created, Params: r.Params,
	}
	if string(jobKey(j.ID)) != string(key) {
		return Job{}, fmt.Errorf("value of %q names job %q: %w", key, j.ID, ErrCorrupt)
	}
	if err := j.validate(); err != nil {
		return Job{}, fmt.Errorf("value of %q: %v: %w", key, err, ErrCorrupt)
	}
	return j, nil
}

func encodePart(p *Partition) []byte {
	r := partRecord{
		Job: p.Job, Index: p.Index, State: p.State.String(), Attempts: p.Attempts,
		LastError: p.LastError, Updated: p.Updated.UTC(), Proof: p.Proof, Public: p.Public,
	}
	if len(p.Timings) > 0 {
		r.TimingsNS = make(map[string]int64, len(p.Timings))
		for k, d := range p.Timings {
			r.TimingsNS[k] = int64(d)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("store: encode partition %s: %v", p.ID(), err))
	}
	return envelope(b)
}

func decodePart(key, v []byte) (Partition, error) {
	payload, err := openEnvelope(key, v)
	if err != nil {
		return Partition{}, err
	}
	var r partRecord
	if err := json.Unmarshal(payload, &r); err != nil {
		return Partition{}, fmt.Errorf("value of %q: %v: %w", key, err, ErrCorrupt)
	}
	st, ok := parseState(r.State)
	if !ok {
		return Partition{}, fmt.Errorf("value of %q: unknown state %q: %w", key, r.State, ErrCorrupt)
	}
	p := Partition{
		Job: r.Job, Index: r.Index, State: st, Attempts: r.Attempts, LastError: r.LastError,
		Updated: r.Updated, Proof: r.Proof, Public: r.Public,
	}
	if len(r.TimingsNS) > 0 {
		p.Timings = make(map[string]time.Duration, len(r.TimingsNS))
		for k, ns := range r.TimingsNS {
			p.Timings[k] = time.Duration(ns)
		}
	}
	if string(partKey(p.Job, p.Index)) != string(key) {
		return Partition{}, fmt.Errorf("value of %q names partition %s: %w", key, p.ID(), ErrCorrupt)
	}
	if (p.State == Proved) != (len(p.Proof) > 0) || p.Attempts < 0 {
		return Partition{}, fmt.Errorf("value of %q: %s with %d proof bytes and %d attempts: %w",
			key, p.State, len(p.Proof), p.Attempts, ErrCorrupt)
	}
	return p, nil
}
