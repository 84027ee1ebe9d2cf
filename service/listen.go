package service

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// ListenOptions says where and how the daemon listens.
type ListenOptions struct {
	// Addr is host:port, or unix:PATH for a unix socket (as Curio reaches
	// cuzk).
	Addr string
	// Token is the bearer token; it is required unless Addr is on loopback
	// or a unix socket.
	Token []byte
	// CertFile and KeyFile, both or neither, serve TLS.
	CertFile, KeyFile string
}

// Listener is an open listening socket and how to serve on it.
type Listener struct {
	net.Listener
	tls       bool
	cert, key string
	unix      string // socket path to remove at close
}

// URL is where clients reach the listener: http(s)://host:port or
// unix:PATH.
func (l *Listener) URL() string {
	if l.unix != "" {
		return "unix:" + l.unix
	}
	if l.tls {
		return "https://" + l.Addr().String()
	}
	return "http://" + l.Addr().String()
}

// Listen checks opt and opens its socket. It refuses an address off
// loopback without a token, and half a TLS pair.
func Listen(opt ListenOptions) (*Listener, error) {
	if (opt.CertFile == "") != (opt.KeyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	l := &Listener{tls: opt.CertFile != ""}
	if path, ok := strings.CutPrefix(opt.Addr, "unix:"); ok {
		if path == "" {
			return nil, errors.New("--listen unix:PATH: no path")
		}
		// A socket left by a process that is gone blocks the bind; a
		// file that is not a socket is someone else's and stays.
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
				c.Close()
				return nil, fmt.Errorf("--listen %s: a daemon already serves there", opt.Addr)
			}
			os.Remove(path)
		}
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, fmt.Errorf("--listen %s: %w", opt.Addr, err)
		}
		// Only the owner: a unix socket needs no token, so its mode is
		// its access control.
		if err := os.Chmod(path, 0o600); err != nil {
			ln.Close()
			return nil, fmt.Errorf("--listen %s: %w", opt.Addr, err)
		}
		l.Listener, l.unix = ln, path
	} else {
		if !IsLoopback(opt.Addr) && len(opt.Token) == 0 {
			return nil, fmt.Errorf("--listen %s is not loopback: give --auth-token-file (and --tls-cert/--tls-key), or listen on 127.0.0.1, [::1] or unix:PATH", opt.Addr)
		}
		ln, err := net.Listen("tcp", opt.Addr)
		if err != nil {
			return nil, fmt.Errorf("--listen %s: %w", opt.Addr, err)
		}
		l.Listener = ln
	}
	if l.tls {
		// Loaded here so that a bad pair stops the start, not the first
		// connection.
		if _, err := tls.LoadX509KeyPair(opt.CertFile, opt.KeyFile); err != nil {
			l.Close()
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		l.cert, l.key = opt.CertFile, opt.KeyFile
	}
	return l, nil
}

// Serve serves srv on the listener, over TLS when it has a certificate,
// until srv stops; it returns nil when srv was shut down.
func (l *Listener) Serve(srv *http.Server) error {
	var err error
	if l.tls {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		err = srv.ServeTLS(l.Listener, l.cert, l.key)
	} else {
		err = srv.Serve(l.Listener)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close closes the socket and removes a unix socket's file.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	if l.unix != "" {
		os.Remove(l.unix)
	}
	return err
}

// IsLoopback reports whether host:port names only loopback addresses. An
// empty host (every interface) is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NewHTTPServer returns the server for h: HTTP/1.1 and HTTP/2, the latter
// over TLS or, without it, in clear text (h2c with prior knowledge, as gRPC
// clients speak it).
func NewHTTPServer(h http.Handler) *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return &http.Server{Handler: h, Protocols: &p, ReadHeaderTimeout: 10 * time.Second}
}
