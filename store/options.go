package store

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures a Store. The zero value is valid; withDefaults fills in
// the documented defaults.
type Options struct {
	// FS is the filesystem the store lives on. Default: vfs.Default (the
	// operating system's). Tests pass an in-memory or fault-injecting FS.
	FS vfs.FS
	// ReadOnly opens an existing store without writing to it (for listing
	// and export). The directory must hold a store already. Pebble still
	// takes the directory's lock, so a store in use by a running prover
	// gives ErrLocked.
	ReadOnly bool
	// Logger receives Pebble's messages. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock for creation and update times. Default: time.Now.
	Now func() time.Time

	// pebbleHook lets tests shrink memtables to force flushes.
	pebbleHook func(*pebble.Options)
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.FS == nil {
		r.FS = vfs.Default
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}
