package store

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// quietLogger keeps Pebble's messages out of test output unless -v.
func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fakeClock starts at a fixed time and advances one second per reading, so
// that outputs with times are stable.
func fakeClock() func() time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// TestDataDriven runs the scenarios in testdata/*.txt against a store on an
// in-memory FS in /db. Rewrite the expected output with -rewrite after a
// deliberate change.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		fs := vfs.NewMem()
		opts := &Options{FS: fs, Logger: quietLogger(), Now: fakeClock()}
		var s *Store
		t.Cleanup(func() {
			if s != nil {
				s.Close()
			}
		})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var job string
			var idx int
			d.MaybeScanArgs(t, "job", &job)
			d.MaybeScanArgs(t, "idx", &idx)
			switch d.Cmd {
			case "open":
				var err error
				s, err = Open("/db", opts)
				return errString(err)
			case "close":
				err := s.Close()
				return errString(err)
			case "create":
				j := Job{ID: job, NumPartitions: 1}
				d.MaybeScanArgs(t, "partitions", &j.NumPartitions)
				d.MaybeScanArgs(t, "circuit", &j.Circuit)
				d.MaybeScanArgs(t, "constraints", &j.Constraints)
				d.MaybeScanArgs(t, "keyhash", &j.KeyHash)
				var prio, seed, witness, params string
				if d.MaybeScanArgs(t, "priority", &prio) {
					p, err := ParsePriority(prio)
					if err != nil {
						return errString(err)
					}
					j.Priority = p
				}
				if d.MaybeScanArgs(t, "seed", &seed) {
					j.Seed = []byte(seed)
				}
				if d.MaybeScanArgs(t, "witness", &witness) {
					j.Witness = []byte(witness)
				}
				if d.MaybeScanArgs(t, "params", &params) {
					j.Params = map[string]string{}
					for kv := range strings.SplitSeq(params, ",") {
						k, v, _ := strings.Cut(kv, ":")
						j.Params[k] = v
					}
				}
				return errString(s.CreateJob(j))
			case "attempt":
				n, err := s.StartAttempt(job, idx)
				if err != nil {
					return errString(err)
				}
				return fmt.Sprintf("attempt %d", n)
			case "synthesized":
				return errString(s.MarkSynthesized(job, idx))
			case "prove":
				var proof, public, timings string
				d.ScanArgs(t, "proof", &proof)
				d.MaybeScanArgs(t, "public", &public)
				var tm map[string]time.Duration
				if d.MaybeScanArgs(t, "timings", &timings) {
					tm = map[string]time.Duration{}
					for kv := range strings.SplitSeq(timings, ",") {
						k, v, _ := strings.Cut(kv, ":")
						dur, err := time.ParseDuration(v)
						if err != nil {
							t.Fatal(err)
						}
						tm[k] = dur
					}
				}
				return errString(s.MarkProved(job, idx, []byte(proof), []byte(public), tm))
			case "fail":
				var reason string
				d.ScanArgs(t, "reason", &reason)
				return errString(s.MarkFailed(job, idx, reason))
			case "reopen":
				return errString(s.Reopen(job, idx))
			case "cancel":
				return errString(s.Cancel(job, idx))
			case "delete":
				return errString(s.DeleteJob(job))
			case "placement":
				pl := Placement{Job: job, Index: idx}
				d.ScanArgs(t, "member", &pl.Member)
				d.ScanArgs(t, "lease", &pl.Lease)
				return errString(s.SetPlacement(pl))
			case "keys":
				// Every key the store holds but its schema key: what a
				// deleted job must not leave behind.
				it, err := s.db.NewIter(nil)
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				for it.First(); it.Valid(); it.Next() {
					if k := string(it.Key()); k != schemaKey {
						fmt.Fprintln(&b, strings.Map(func(r rune) rune {
							if r >= '0' && r <= '9' && strings.HasPrefix(k, createdPrefix) {
								return 'N' // creation times vary with the clock
							}
							return r
						}, k))
					}
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				return b.String()
			case "job":
				j, err := s.Job(job)
				if err != nil {
					return errString(err)
				}
				return fmt.Sprintf("%s circuit=%s constraints=%d keyhash=%s partitions=%d priority=%s created=%s seed=%q witness=%q params=%s\n",
					j.ID, j.Circuit, j.Constraints, j.KeyHash, j.NumPartitions, j.Priority,
					j.Created.Format(time.RFC3339), j.Seed, j.Witness, sortedMap(j.Params))
			case "jobs", "unfinished":
				list := s.Jobs
				if d.Cmd == "unfinished" {
					list = s.UnfinishedJobs
				}
				sums, err := list()
				if err != nil {
					return errString(err)
				}
				var b strings.Builder
				for _, j := range sums {
					fmt.Fprintf(&b, "%s created=%s pending=%d synthesized=%d proved=%d failed=%d attempts=%d finished=%t done=%t\n",
						j.ID, j.Created.Format(time.RFC3339), j.Pending, j.Synthesized, j.Proved, j.Failed, j.Attempts, j.Finished(), j.Done())
				}
				return b.String()
			case "partitions":
				parts, err := s.Partitions(job)
				if err != nil {
					return errString(err)
				}
				var b strings.Builder
				for _, p := range parts {
					fmt.Fprintf(&b, "%s %s attempts=%d", p.ID(), p.State, p.Attempts)
					if p.LastError != "" {
						fmt.Fprintf(&b, " error=%q", p.LastError)
					}
					if p.State == Proved {
						fmt.Fprintf(&b, " proof=%q public=%q timings=%s", p.Proof, p.Public, sortedMap(p.Timings))
					}
					fmt.Fprintf(&b, " updated=%s\n", p.Updated.Format(time.TimeOnly))
				}
				return b.String()
			case "proofs":
				proofs, err := s.Proofs(job)
				if err != nil {
					return errString(err)
				}
				var b strings.Builder
				for _, p := range proofs {
					fmt.Fprintf(&b, "%d proof=%q public=%q\n", p.Index, p.Proof, p.Public)
				}
				return b.String()
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// errString prints err and the sentinels it wraps, or "ok".
func errString(err error) string {
	if err == nil {
		return "ok"
	}
	var is []string
	for _, s := range []error{ErrNotFound, ErrExists, ErrAlreadyProved, ErrTransition, ErrCorrupt,
		ErrLocked, ErrSchema, ErrIO, ErrClosed, ErrInvalid} {
		if errors.Is(err, s) {
			is = append(is, s.Error())
		}
	}
	return fmt.Sprintf("error: %v [is: %s]", err, strings.Join(is, ", "))
}

func sortedMap[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%v", k, m[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
