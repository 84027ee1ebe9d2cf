package store

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// pebbleLogger routes Pebble's messages to slog. Pebble calls Fatalf where it
// cannot go on (a failed WAL write, a failed MANIFEST sync, a broken invariant)
// and expects it not to return; the default logger exits the process. A
// prover holding other jobs in memory should not die for a store, so Fatalf
// records the error and returns, and the Store refuses every later operation
// (see Store.health). Pebble's code after such a Fatalf call may return nil,
// which is why the Store checks for a recorded fatal error after each write.
type pebbleLogger struct {
	log *slog.Logger
	dir string

	mu    sync.Mutex
	fatal error
}

func (l *pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "store", l.dir)
}

func (l *pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "store", l.dir)
}

func (l *pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("fatal: "+msg, "store", l.dir)
	// Pebble's errors print their stacks; the first line says what
	// happened and is what the caller's error carries.
	msg, _, _ = strings.Cut(msg, "\n")
	// A failed write or sync is the disk's fault, not the data's: the
	// store may be fine once reopened on a healthy disk.
	kind := ErrCorrupt
	if strings.Contains(msg, "commit error") || strings.Contains(msg, "MANIFEST") && strings.Contains(msg, "failed") {
		kind = ErrIO
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fatal == nil {
		l.fatal = fmt.Errorf("%w: %w", kind, errors.New(msg))
	}
}

func (l *pebbleLogger) fatalErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}
