package store

import "errors"

// Sentinel errors. Errors returned by the store wrap one of these where it
// applies (test with errors.Is) and name the store's directory.
var (
	// ErrNotFound reports a job, a partition or a store that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists reports a job id that is already taken.
	ErrExists = errors.New("already exists")
	// ErrAlreadyProved reports an attempt to change a proved partition: a
	// proved partition is final and is never proved again.
	ErrAlreadyProved = errors.New("partition already proved")
	// ErrTransition reports a state change that would not move a partition
	// forward, such as any change to a failed partition.
	ErrTransition = errors.New("invalid partition state transition")
	// ErrCorrupt reports data that fails its checksum or cannot be decoded,
	// and corruption detected by Pebble.
	ErrCorrupt = errors.New("store corrupt")
	// ErrLocked reports a store directory held by another process (or by
	// another Store in this process).
	ErrLocked = errors.New("store locked")
	// ErrSchema reports a store written with a schema this build does not
	// know, or a Pebble database that is not a cuzk store.
	ErrSchema = errors.New("unsupported store schema")
	// ErrIO reports a write the disk refused. The store refuses further
	// writes after it: close it and reopen it once the disk is healthy.
	ErrIO = errors.New("store I/O failure")
	// ErrClosed reports use of a closed store.
	ErrClosed = errors.New("store closed")
	// ErrInvalid reports an argument the store refuses, such as a job id
	// with characters outside [A-Za-z0-9._-].
	ErrInvalid = errors.New("invalid argument")
)
