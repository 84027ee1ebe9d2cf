package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The key schema (docs/store.md). Keys are ASCII so that a dump of the
// database reads as text; fixed-width decimal numbers sort as numbers.
//
//	cuzk/schema                       decimal schema version, no envelope
//	j/<id>                            job record
//	j/<id>/in/seed                    job seed bytes
//	j/<id>/in/witness                 job witness-input bytes
//	j/<id>/p/<index:06d>              partition record
//	j/<id>/pl/<index:06d>             placement: the partition's lease in a cluster (placement.go)
//	i/created/<unixnano:020d>/<id>    empty: jobs in creation order
//	i/unfinished/<id>                 empty: jobs with a partition not final
//
// A job id never holds '/', so no job's keys are a prefix of another's.
const (
	schemaKey        = "cuzk/schema"
	schemaVersion    = 1
	jobPrefix        = "j/"
	createdPrefix    = "i/created/"
	unfinishedPrefix = "i/unfinished/"
)

func jobKey(id string) []byte        { return []byte(jobPrefix + id) }
func seedKey(id string) []byte       { return []byte(jobPrefix + id + "/in/seed") }
func witnessKey(id string) []byte    { return []byte(jobPrefix + id + "/in/witness") }
func partPrefix(id string) []byte    { return []byte(jobPrefix + id + "/p/") }
func unfinishedKey(id string) []byte { return []byte(unfinishedPrefix + id) }

func partKey(id string, idx int) []byte {
	return fmt.Appendf(nil, "%s%s/p/%06d", jobPrefix, id, idx)
}

func createdKey(id string, created time.Time) []byte {
	return fmt.Appendf(nil, "%s%020d/%s", createdPrefix, created.UnixNano(), id)
}

// idFromCreatedKey returns the job id at the end of an i/created key.
func idFromCreatedKey(k []byte) (string, error) {
	rest, ok := strings.CutPrefix(string(k), createdPrefix)
	if !ok || len(rest) < 22 || rest[20] != '/' {
		return "", fmt.Errorf("malformed index key %q: %w", k, ErrCorrupt)
	}
	return rest[21:], nil
}

// indexFromPartKey returns the partition index at the end of a j/<id>/p key.
func indexFromPartKey(id string, k []byte) (int, error) {
	rest, ok := strings.CutPrefix(string(k), string(partPrefix(id)))
	if !ok || len(rest) != 6 {
		return 0, fmt.Errorf("malformed partition key %q: %w", k, ErrCorrupt)
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return 0, fmt.Errorf("malformed partition key %q: %w", k, ErrCorrupt)
	}
	return n, nil
}

// prefixEnd is the smallest key greater than every key with prefix p (p is
// ASCII, so its last byte is never 0xff).
func prefixEnd(p []byte) []byte {
	e := append([]byte(nil), p...)
	e[len(e)-1]++
	return e
}
