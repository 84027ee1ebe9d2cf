package cluster

import (
	"context"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// protoactorLogger is protoactor's logger: warnings and errors only (its
// info logs repeat at every topology poll), and without the static
// provider's failed health checks, which repeat every poll while a member
// is down (the cluster actor logs the member leaving once), a joining
// member's answer, the health server's stop, and failed connects to the
// addresses in probed (where members left: asking them for a hello is
// expected to fail while nothing runs there).
func protoactorLogger(system *actor.ActorSystem, probed *sync.Map) *slog.Logger {
	return slog.New(quietHandler{slog.Default().Handler(), probed}).With("lib", "protoactor", "system", system.ID)
}

type quietHandler struct {
	slog.Handler
	probed *sync.Map
}

var repeated = map[string]bool{
	"Bad connection to the node health status": true,
	"Failure reaching nodes":                   true,
	"Bad response from the node health status": true, // 503 while a member joins
	"Automanaged server stopping..!":           true, // at every stop
}

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

// failedConnect holds protoactor's messages for each failed try to reach
// an address (the stream first, then the connect).
var failedConnect = map[string]bool{
	"EndpointWriter failed to create receive stream": true,
	"EndpointWriter failed to connect":               true,
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if repeated[r.Message] || failedConnect[r.Message] && h.toProbed(r) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// toProbed reports whether r names an address in h.probed.
func (h quietHandler) toProbed(r slog.Record) bool {
	if h.probed == nil {
		return false
	}
	probed := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "address" {
			_, probed = h.probed.Load(a.Value.String())
			return false
		}
		return true
	})
	return probed
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as), h.probed}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name), h.probed}
}
