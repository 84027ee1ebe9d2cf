// Package store keeps cuzk's jobs, partitions and proofs durable in Pebble, so
// that a crash of the process loses no proved partition and an interrupted job
// can be resumed.
//
// Every state transition is one Pebble batch committed with pebble.Sync: when a
// method returns nil, what it wrote survives a crash of the process or of the
// machine. A partition moves only forward (pending → synthesized → proved or
// failed); proved and failed are final, and a proved partition is never proved
// again (ErrAlreadyProved). The key schema, the value encoding and the rules
// resume relies on are described in docs/store.md.
package store
