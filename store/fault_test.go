package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// sample is a store's content written by writeSample: job "a" with three
// partitions, 0 and 1 proved.
var sampleProofs = [][]byte{[]byte("proof-0"), []byte("proof-1")}

func writeSample(t *testing.T, dir string, opts *Options, flush bool) {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := s.CreateJob(Job{ID: "a", NumPartitions: 3, Witness: bytes.Repeat([]byte("w"), 2000)}); err != nil {
		t.Fatal(err)
	}
	for i, p := range sampleProofs {
		if err := s.MarkProved("a", i, p, []byte("public"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if flush {
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSample reads everything the sample wrote. Every read must either give
// the data written or fail with ErrCorrupt; a job lost whole is reported as
// lost, for the caller to judge.
func checkSample(s *Store) (lost bool, err error) {
	parts, err := s.Partitions("a")
	if errors.Is(err, ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for i, p := range sampleProofs {
		if parts[i].State != Proved || !bytes.Equal(parts[i].Proof, p) {
			return false, fmt.Errorf("partition %d reads back as %s with proof %q, want proved with %q", i, parts[i].State, parts[i].Proof, p)
		}
	}
	j, err := s.Job("a")
	if err != nil {
		return false, err
	}
	if !bytes.Equal(j.Witness, bytes.Repeat([]byte("w"), 2000)) {
		return false, fmt.Errorf("witness reads back as %d bytes", len(j.Witness))
	}
	return false, nil
}

// fileNames lists the files of dir.
func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestCorruptFiles damages the files of a store on disk and opens it. The
// store must fail with ErrCorrupt and an error naming its directory, and do no
// further damage (once the damaged files are repaired, everything is there),
// or open and read back exactly what was written. Pebble treats a damaged WAL like the torn
// tail of a crash and drops what follows the damage; the cases where that
// may lose data say so (docs/store.md).
func TestCorruptFiles(t *testing.T) {
	flip := func(b []byte) []byte {
		for i := len(b) / 3; i < len(b)*2/3; i += 7 {
			b[i] ^= 0x5a
		}
		return b
	}
	truncate := func(b []byte) []byte { return b[:len(b)/2] }
	cases := []struct {
		name     string
		flush    bool // move the data from the WAL to an sstable first
		file     string
		damage   func([]byte) []byte
		mayLose  bool // Pebble may drop the data silently
		mustFail bool
	}{
		{"MANIFEST overwritten", false, "MANIFEST-", flip, false, true},
		{"MANIFEST truncated", false, "MANIFEST-", truncate, false, true},
		{"MANIFEST overwritten after flush", true, "MANIFEST-", flip, false, false},
		{"sstable overwritten", true, ".sst", flip, false, false},
		{"sstable truncated", true, ".sst", truncate, false, false},
		{"WAL overwritten", false, ".log", flip, true, false},
		{"WAL truncated", false, ".log", truncate, true, false},
		{"OPTIONS overwritten", false, "OPTIONS-", flip, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := &Options{Logger: quietLogger()}
			writeSample(t, dir, opts, tc.flush)
			originals := map[string][]byte{}
			for _, name := range fileNames(t, dir) {
				if !strings.Contains(name, tc.file) {
					continue
				}
				p := filepath.Join(dir, name)
				b, err := os.ReadFile(p)
				if err != nil || len(b) == 0 {
					continue
				}
				originals[p] = slices.Clone(b)
				if err := os.WriteFile(p, tc.damage(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if len(originals) == 0 {
				t.Fatalf("no non-empty %s file in %s", tc.file, dir)
			}
			s, err := Open(dir, opts)
			lost := false
			if err == nil {
				lost, err = checkSample(s)
				if cerr := s.Close(); err == nil && !lost {
					err = cerr
				}
			}
			switch {
			case err != nil:
				t.Logf("open and read: %v", err)
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("open and read: %v; want ErrCorrupt naming %s", err, dir)
				}
			case lost && tc.mayLose:
				t.Logf("opened; Pebble dropped the WAL from the damage on (known limitation)")
				return
			case lost:
				t.Fatalf("job lost without an error")
			case tc.mustFail:
				t.Fatalf("open succeeded on a store with a damaged %s", tc.file)
			default:
				t.Logf("opened; data intact")
				return
			}
			// The failure did no further damage: with the damaged
			// files repaired, everything is there.
			for p, b := range originals {
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err = Open(dir, opts)
			if err != nil {
				t.Fatalf("open after repair: %v", err)
			}
			defer s.Close()
			if lost, err := checkSample(s); err != nil || lost {
				t.Fatalf("after repair: lost %t, %v", lost, err)
			}
		})
	}
}

// TestCorruptValue damages one value under Pebble's checksums: the store's
// own checksum catches it.
func TestCorruptValue(t *testing.T) {
	opts := &Options{FS: vfs.NewMem(), Logger: quietLogger()}
	writeSample(t, "/db", opts, false)
	s, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.get(partKey("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	v[len(v)-3] ^= 1
	if err := s.db.Set(partKey("a", 1), v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	_, err = s.Partitions("a")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("partitions: %v; want ErrCorrupt for a checksum mismatch", err)
	}
	t.Log(err)
}

func TestSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		kvs  map[string]string
		want string
	}{
		{"newer", map[string]string{schemaKey: "2"}, "newer than this build"},
		{"garbled", map[string]string{schemaKey: "x"}, "schema version"},
		{"foreign", map[string]string{"some/key": "v"}, "not a cuzk store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			db, err := pebble.Open("/db", &pebble.Options{FS: fs, Logger: &pebbleLogger{log: quietLogger()}})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.kvs {
				if err := db.Set([]byte(k), []byte(v), pebble.Sync); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = Open("/db", &Options{FS: fs, Logger: quietLogger()})
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/db") {
				t.Fatalf("open: %v; want ErrSchema saying %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(filepath.Join(dir, "none"), &Options{ReadOnly: true, Logger: quietLogger()})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("read-only open of a missing store: %v; want ErrNotFound", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "none")); serr == nil {
		t.Fatalf("read-only open created %s", filepath.Join(dir, "none"))
	}
	writeSample(t, dir, &Options{Logger: quietLogger()}, false)
	s, err := Open(dir, &Options{ReadOnly: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := checkSample(s); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkProved("a", 2, []byte("p"), nil, nil); err == nil {
		t.Fatal("a read-only store accepted a write")
	}
}

// eio is an injected disk error as the OS reports it, naming the file.
func eio(op errorfs.Op) error {
	name := "write"
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		name = "sync"
	}
	return &fs.PathError{Op: name, Path: op.Path, Err: syscall.EIO}
}

// TestDiskFailsOnWrite breaks the disk under an open store: the write in
// flight and every later operation fail with ErrIO, nothing panics, and the
// store reopened on a healthy disk holds everything acknowledged before.
func TestDiskFailsOnWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		hit  func(errorfs.Op) bool
	}{
		{"every write", func(op errorfs.Op) bool { return op.Kind.ReadOrWrite() == errorfs.OpIsWrite }},
		{"WAL writes", func(op errorfs.Op) bool {
			return op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".log")
		}},
		{"fsync", func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var broken atomic.Bool
			failing := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if broken.Load() && tc.hit(op) {
					return eio(op)
				}
				return nil
			}))
			s, err := Open(dir, &Options{FS: failing, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreateJob(Job{ID: "a", NumPartitions: 3}); err != nil {
				t.Fatal(err)
			}
			if err := s.MarkProved("a", 0, []byte("proof-0"), nil, nil); err != nil {
				t.Fatal(err)
			}
			broken.Store(true)
			err = s.MarkProved("a", 1, []byte("proof-1"), nil, nil)
			if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("write on a failing disk: %v; want ErrIO naming %s", err, dir)
			}
			t.Logf("write: %v", err)
			if err := s.MarkProved("a", 2, []byte("proof-2"), nil, nil); !errors.Is(err, ErrIO) {
				t.Fatalf("write after a failure: %v; want ErrIO", err)
			}
			if _, err := s.Jobs(); !errors.Is(err, ErrIO) {
				t.Fatalf("read after a failure: %v; want ErrIO", err)
			}
			t.Logf("close: %v", s.Close())
			broken.Store(false)

			s, err = Open(dir, &Options{Logger: quietLogger()})
			if err != nil {
				t.Fatalf("reopen on a healthy disk: %v", err)
			}
			defer s.Close()
			parts, err := s.Partitions("a")
			if err != nil {
				t.Fatal(err)
			}
			if parts[0].State != Proved || string(parts[0].Proof) != "proof-0" {
				t.Fatalf("acknowledged proof lost: partition 0 is %s with %q", parts[0].State, parts[0].Proof)
			}
			// The failed write may or may not have reached the disk;
			// if it did, it is whole.
			if parts[1].State == Proved && string(parts[1].Proof) != "proof-1" {
				t.Fatalf("partition 1 proved with %q", parts[1].Proof)
			}
			if parts[2].State != Pending {
				t.Fatalf("partition 2 is %s; its write was refused", parts[2].State)
			}
			if err := s.MarkProved("a", 2, []byte("proof-2"), nil, nil); err != nil {
				t.Fatalf("write on the healthy disk: %v", err)
			}
		})
	}
}

// TestDiskFailsAtOpen: a disk that refuses writes from the start fails Open
// with ErrIO, naming the store.
func TestDiskFailsAtOpen(t *testing.T) {
	dir := t.TempDir()
	failing := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return eio(op)
		}
		return nil
	}))
	_, err := Open(filepath.Join(dir, "db"), &Options{FS: failing, Logger: quietLogger()})
	if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open on a failing disk: %v; want ErrIO naming the store", err)
	}
	t.Log(err)
}

// TestForeignDirectory: a directory with files of its own is not made a
// store; an empty one is.
func TestForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, &Options{Logger: quietLogger()})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open of a directory with other files: %v; want ErrInvalid naming notes.txt", err)
	}
	t.Log(err)
	if names := fileNames(t, dir); len(names) != 1 {
		t.Fatalf("the refused open left %v", names)
	}
	s, err := Open(t.TempDir(), &Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("open of an empty directory: %v", err)
	}
	s.Close()
}
