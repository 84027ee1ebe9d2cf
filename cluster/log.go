package cluster

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// quietLogger is protoactor's logger: warnings and errors only (its info
// logs repeat at every topology poll), and without the static provider's
// failed health checks, which repeat every poll while a member is down
// (the cluster actor logs the member leaving once), a joining member's
// answer and the health server's stop.
func quietLogger(system *actor.ActorSystem) *slog.Logger {
	return slog.New(quietHandler{slog.Default().Handler()}).With("lib", "protoactor", "system", system.ID)
}

type quietHandler struct{ slog.Handler }

var repeated = map[string]bool{
	"Bad connection to the node health status": true,
	"Failure reaching nodes":                   true,
	"Bad response from the node health status": true, // 503 while a member joins
	"Automanaged server stopping..!":           true, // at every stop
}

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if repeated[r.Message] {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}
