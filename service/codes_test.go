package service

import (
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"github.com/cuzk/cuzk/runner"
)

// A job that cannot fit the daemon is refused as a precondition of the
// daemon, not as an internal error.
func TestTooLargeIsAFailedPrecondition(t *testing.T) {
	for _, err := range []error{runner.ErrTooLarge, runner.ErrHostTooLarge} {
		wrapped := fmt.Errorf("submit job j: %w: 4 GiB on device 0 with 2 GiB", err)
		if got := codeOf(wrapped); got != connect.CodeFailedPrecondition {
			t.Errorf("%v: code %v, want %v", wrapped, got, connect.CodeFailedPrecondition)
		}
	}
}
