package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// formatVersion is the Pebble on-disk format a new store is created with. It
// is pinned, not pebble.FormatNewest, so that upgrading Pebble does not
// silently ratchet existing stores to a format older builds cannot read.
const formatVersion = pebble.FormatValueSeparation

// Store is a durable record of jobs, partitions and proofs, in one Pebble
// database. Its methods are safe for concurrent use. Writes are serialized:
// a prover writes a few records a second, and one writer at a time keeps each
// read-check-write of a partition atomic.
type Store struct {
	dir  string
	opts Options
	db   *pebble.DB
	log  *pebbleLogger

	// closeMu is held for reading by every operation and for writing by
	// Close, so that Close waits for operations in flight.
	closeMu sync.RWMutex
	closed  bool

	writeMu sync.Mutex

	brokenMu sync.Mutex
	broken   error
}

// Open opens the store in dir, creating it (and dir) unless opts.ReadOnly. A
// nil opts means the defaults. It fails with ErrLocked when another process
// holds the store, ErrSchema when the store was written by a newer build or
// dir holds a Pebble database that is not a store, ErrCorrupt when Pebble
// finds the database damaged, ErrIO when the disk fails, ErrInvalid when dir
// holds files of its own, and ErrNotFound when ReadOnly and there is no store.
func Open(dir string, opts *Options) (s *Store, err error) {
	o := opts.withDefaults()
	lg := &pebbleLogger{log: o.Logger, dir: dir}
	po := &pebble.Options{FS: o.FS, Logger: lg, ReadOnly: o.ReadOnly}
	if !o.ReadOnly {
		po.FormatMajorVersion = formatVersion
	}
	if o.pebbleHook != nil {
		o.pebbleHook(po)
	}
	if o.ReadOnly {
		// Pebble reports a missing directory in read-only mode in
		// words only.
		if _, err := o.FS.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open store %s: no store there: %w", dir, ErrNotFound)
		}
	}
	if err := checkDir(o.FS, dir); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	var db *pebble.DB
	defer func() {
		if r := recover(); r != nil {
			closeQuietly(db)
			s, err = nil, fmt.Errorf("open store %s: pebble panicked: %v: %w", dir, r, ErrCorrupt)
		}
	}()
	db, err = pebble.Open(dir, po)
	if err != nil {
		return nil, openError(dir, err)
	}
	s = &Store{dir: dir, opts: o, db: db, log: lg}
	err = s.checkSchema()
	if err == nil {
		err = lg.fatalErr()
	}
	if err != nil {
		closeQuietly(db)
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, nil
}

// checkDir refuses to create a store in a directory that holds files of its
// own (a mistyped --store pointing at a home directory): Pebble would add its
// files among them. A directory with Pebble's files only, such as one left by
// a crash during creation, is fine.
func checkDir(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return nil // missing: Pebble creates it; unreadable: Pebble says why
	}
	var foreign []string
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			return nil // an existing database; checkSchema decides
		}
		pebbleFile := n == "LOCK" || n == "CURRENT" || strings.HasPrefix(n, "OPTIONS-") ||
			strings.HasPrefix(n, "marker.") || strings.HasPrefix(n, "temporary.") ||
			strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".sst") || strings.HasSuffix(n, ".dbtmp")
		if !pebbleFile {
			foreign = append(foreign, n)
		}
	}
	if len(foreign) > 0 {
		slices.Sort(foreign)
		if len(foreign) > 3 {
			foreign = append(foreign[:3], "...")
		}
		return fmt.Errorf("directory holds other files (%s): a store needs a directory of its own: %w",
			strings.Join(foreign, ", "), ErrInvalid)
	}
	return nil
}

// closeQuietly closes a database that is being given up on; its own error or
// panic would hide the one that made us give up.
func closeQuietly(db *pebble.DB) {
	if db == nil {
		return
	}
	defer func() { _ = recover() }()
	_ = db.Close()
}

func openError(dir string, err error) error {
	var pe *fs.PathError
	var errno syscall.Errno
	switch {
	case isLockError(err):
		return fmt.Errorf("open store %s: %w (%v)", dir, ErrLocked, err)
	case errors.Is(err, pebble.ErrDBDoesNotExist):
		return fmt.Errorf("open store %s: no store there: %w", dir, ErrNotFound)
	case pebble.IsCorruptionError(err):
		return fmt.Errorf("open store %s: %w: %w", dir, ErrCorrupt, err)
	case errors.As(err, &pe) || errors.As(err, &errno):
		return fmt.Errorf("open store %s: %w: %w", dir, ErrIO, err)
	}
	// Pebble reports files that contradict each other (a table shorter
	// than the MANIFEST says, an OPTIONS file that does not parse) without
	// marking all of them as corruption; the disk answered, so the files
	// are at fault.
	return fmt.Errorf("open store %s: %w: %w", dir, ErrCorrupt, err)
}

// isLockError tells a lock held elsewhere from a LOCK file that cannot be
// created: fcntl reports the former as a bare EAGAIN or EACCES, os.Create the
// latter as a *fs.PathError; Pebble reports a lock held in this process in
// words.
func isLockError(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return false
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

func (s *Store) checkSchema() error {
	v, err := s.get([]byte(schemaKey))
	if errors.Is(err, pebble.ErrNotFound) {
		it, err := s.db.NewIter(nil)
		if err != nil {
			return err
		}
		empty := !it.First()
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		switch {
		case !empty:
			return fmt.Errorf("a Pebble database without a schema version is not a cuzk store: %w", ErrSchema)
		case s.opts.ReadOnly:
			return nil // a store created and never written reads as empty
		}
		return s.db.Set([]byte(schemaKey), []byte(strconv.Itoa(schemaVersion)), pebble.Sync)
	}
	if err != nil {
		return err
	}
	n, perr := strconv.Atoi(string(v))
	switch {
	case perr != nil:
		return fmt.Errorf("schema version %q: %w", v, ErrSchema)
	case n > schemaVersion:
		return fmt.Errorf("schema version %d is newer than this build reads (%d): %w", n, schemaVersion, ErrSchema)
	case n != schemaVersion:
		return fmt.Errorf("schema version %d is not one this build reads (%d): %w", n, schemaVersion, ErrSchema)
	}
	return nil
}

// Dir returns the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// Close closes the store, waiting for operations in flight. Closing twice is
// an error wrapping ErrClosed.
func (s *Store) Close() (err error) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return fmt.Errorf("close store %s: %w", s.dir, ErrClosed)
	}
	s.closed = true
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("close store %s: pebble panicked: %v: %w", s.dir, r, ErrCorrupt)
		}
	}()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.dir, err)
	}
	if s.health() != nil {
		// Pebble may close cleanly after a fatal error it was made to
		// survive; the caller must still learn that writes were lost.
		return fmt.Errorf("close store %s: %w", s.dir, s.health())
	}
	return nil
}

// begin starts an operation: it fails on a closed or broken store, and
// otherwise holds off Close until the returned func is called.
func (s *Store) begin(op string) (func(), error) {
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, fmt.Errorf("store %s: %s: %w", s.dir, op, ErrClosed)
	}
	if err := s.health(); err != nil {
		s.closeMu.RUnlock()
		return nil, fmt.Errorf("store %s: %s: store unusable since an earlier failure, reopen it: %w", s.dir, op, err)
	}
	return s.closeMu.RUnlock, nil
}

// health reports the first failure that makes the store unusable: a panic
// caught at the API boundary or a fatal error Pebble reported.
func (s *Store) health() error {
	s.brokenMu.Lock()
	defer s.brokenMu.Unlock()
	if s.broken == nil {
		s.broken = s.log.fatalErr()
	}
	return s.broken
}

func (s *Store) setBroken(err error) {
	s.brokenMu.Lock()
	defer s.brokenMu.Unlock()
	if s.broken == nil {
		s.broken = err
	}
}

// guard turns a panic in Pebble or in an invariant check into an error at
// the API boundary and marks the store unusable, since what it holds in
// memory can no longer be trusted. Call it deferred, after begin's release
// (so it runs first).
func (s *Store) guard(op string, err *error) {
	if r := recover(); r != nil {
		e := fmt.Errorf("store %s: %s: panic: %v: %w", s.dir, op, r, ErrCorrupt)
		s.setBroken(e)
		*err = e
	}
}

// reader is what reads need of a *pebble.DB or a *pebble.Snapshot.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// get returns a copy of the value of key; Pebble's copy is valid only until
// its closer is closed.
func (s *Store) get(key []byte) ([]byte, error) { return getFrom(s.db, key) }

func getFrom(r reader, key []byte) ([]byte, error) {
	v, c, err := r.Get(key)
	if err != nil {
		return nil, pebbleError(err)
	}
	v = append([]byte(nil), v...)
	return v, pebbleError(c.Close())
}

// pebbleError marks Pebble's corruption errors with ErrCorrupt.
func pebbleError(err error) error {
	if err != nil && pebble.IsCorruptionError(err) && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// commit applies b durably. A write error, or a fatal error Pebble reported
// while it (or anything else) ran, fails the commit: Pebble may return nil
// from Apply after a failed WAL write, and a false failure is safe where a
// false success would lose a proof.
func (s *Store) commit(b *pebble.Batch) error {
	defer b.Close()
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		err = fmt.Errorf("%w: %w", ErrIO, err)
		s.setBroken(err)
		return err
	}
	return s.health()
}

// OpenInMemory opens a new, empty store that lives in memory only: a run
// without checkpoints (cuzk prove without --store) records its jobs the same
// way, and nothing of it outlives the process.
func OpenInMemory() (*Store, error) {
	return Open("/cuzk-memory", &Options{FS: vfs.NewMem()})
}
