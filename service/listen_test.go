package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
)

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9820": true, "127.1.2.3:1": true, "[::1]:9820": true, "localhost:9820": true,
		":9820": false, "0.0.0.0:9820": false, "[::]:9820": false, "10.0.0.5:9820": false,
		"example.com:9820": false, "127.0.0.1": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestListenRefusesExposed: off loopback without a token, nothing listens.
func TestListenRefusesExposed(t *testing.T) {
	for _, opt := range []ListenOptions{
		{Addr: "0.0.0.0:0"},
		{Addr: ":0"},
		{Addr: "127.0.0.1:0", CertFile: "cert.pem"},
	} {
		if ln, err := Listen(opt); err == nil {
			ln.Close()
			t.Errorf("Listen(%+v) listened", opt)
		}
	}
	ln, err := Listen(ListenOptions{Addr: "0.0.0.0:0", Token: []byte("0123456789abcdef")})
	if err != nil {
		t.Fatalf("off loopback with a token: %v", err)
	}
	ln.Close()
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "token")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := ReadToken(write("  0123456789abcdef0123\n")); err != nil || string(tok) != "0123456789abcdef0123" {
		t.Errorf("ReadToken: %q %v", tok, err)
	}
	for _, s := range []string{"", "short\n", "0123456789 abcdef0123"} {
		if _, err := ReadToken(write(s)); err == nil {
			t.Errorf("ReadToken(%q) accepted", s)
		}
	}
	if _, err := ReadToken(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing file: %v", err)
	}
}

// TestUnixSocket serves on a unix socket, as Curio reaches cuzk, with no
// token, and removes the socket at close.
func TestUnixSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "cuzk-sock-") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cuzk.sock")
	e := startEngine(t, engineOpts{addr: "unix:" + path})
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	if ln, err := Listen(ListenOptions{Addr: "unix:" + path}); err == nil {
		ln.Close()
		t.Error("a second listener took a socket a daemon serves")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res cuzkv1.AwaitProofResponse
	if err := dial(t, e, "").call(ctx, "Prove", &cuzkv1.ProveRequest{Submit: exampleJob("", 1, nil)}, &res); err != nil || len(res.Proofs) != 1 {
		t.Fatalf("prove over the socket: %v", err)
	}
	if e.ln.URL() != "unix:"+path {
		t.Errorf("URL %s", e.ln.URL())
	}
}
