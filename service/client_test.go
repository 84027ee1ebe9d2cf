package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
)

// NewClient reaches a daemon at every address its "serving" line gives:
// a unix socket, and https with a token and a CA file (with neither the
// token nor the CA it is refused).
func TestNewClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status := func(opt ClientOptions) error {
		t.Helper()
		cl, err := NewClient(opt)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.GetStatus(ctx, connect.NewRequest(&cuzkv1.GetStatusRequest{}))
		return err
	}
	dir, err := os.MkdirTemp("", "cuzk-sock-") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "cuzk.sock")
	u := startEngine(t, engineOpts{addr: "unix:" + sock})
	if err := status(ClientOptions{Addr: u.ln.URL()}); err != nil {
		t.Errorf("over %s: %v", u.ln.URL(), err)
	}

	certFile, keyFile, _ := selfSigned(t)
	const token = "0123456789abcdef0123456789abcdef"
	e := startEngine(t, engineOpts{token: []byte(token), tls: [2]string{certFile, keyFile}})
	for _, c := range []struct {
		opt  ClientOptions
		want connect.Code
	}{
		{ClientOptions{Addr: e.ln.URL(), Token: []byte(token), CAFile: certFile}, 0},
		{ClientOptions{Addr: e.ln.URL(), CAFile: certFile}, connect.CodeUnauthenticated},
		{ClientOptions{Addr: e.ln.URL(), Token: []byte(token)}, connect.CodeUnavailable}, // the certificate is not trusted
	} {
		if err := status(c.opt); connect.CodeOf(err) != c.want && !(c.want == 0 && err == nil) {
			t.Errorf("over %s with token %t and CA %q: %v, want %v", c.opt.Addr, c.opt.Token != nil, c.opt.CAFile, err, c.want)
		}
	}
	for _, bad := range []ClientOptions{{}, {Addr: "unix:"}, {Addr: "nonsense"}, {Addr: "127.0.0.1:1", CAFile: certFile},
		{Addr: "https://127.0.0.1:1", CAFile: filepath.Join(t.TempDir(), "none.pem")}} {
		if _, err := NewClient(bad); err == nil {
			t.Errorf("NewClient(%+v): no error", bad)
		}
	}
}
