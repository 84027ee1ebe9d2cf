package service

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"connectrpc.com/connect"

	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
)

// ClientOptions name a daemon for NewClient.
type ClientOptions struct {
	// Addr is the daemon's address as its --listen or its "serving" line
	// gives it: host:port, unix:PATH, http://host:port or https://host:port.
	Addr string
	// Token is the bearer token of the daemon's --auth-token-file; nil for
	// none.
	Token []byte
	// CAFile, for https, holds the PEM certificates that sign the daemon's
	// (its --tls-cert where that is self-signed); empty: the system's.
	CAFile string
}

// NewClient returns a client of the daemon at opt.Addr over the Connect
// protocol (HTTP/1.1 or HTTP/2), each call carrying the token. It dials
// nothing until the first call.
func NewClient(opt ClientOptions) (cuzkv1connect.ProvingEngineClient, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var base string
	switch addr := opt.Addr; {
	case addr == "":
		return nil, errors.New("no daemon address: host:port, unix:PATH, http://host:port or https://host:port")
	case strings.HasPrefix(addr, "unix:"):
		path := strings.TrimPrefix(addr, "unix:")
		if path == "" {
			return nil, fmt.Errorf("daemon address %s: no path", addr)
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		base = "http://cuzk"
	case strings.HasPrefix(addr, "http://"), strings.HasPrefix(addr, "https://"):
		base = strings.TrimSuffix(addr, "/")
	default:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("daemon address %s: want host:port, unix:PATH, http://host:port or https://host:port", addr)
		}
		base = "http://" + addr
	}
	if opt.CAFile != "" {
		if !strings.HasPrefix(base, "https://") {
			return nil, fmt.Errorf("a CA file for daemon address %s: it goes with https://", opt.Addr)
		}
		pem, err := os.ReadFile(opt.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it", opt.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	hc := &http.Client{Transport: tr}
	var opts []connect.ClientOption
	if len(opt.Token) > 0 {
		opts = append(opts, connect.WithInterceptors(bearerToken(opt.Token)))
	}
	return cuzkv1connect.NewProvingEngineClient(hc, base, opts...), nil
}

// bearerToken adds "Authorization: Bearer <token>" to every call, unary and
// streaming.
type bearerToken []byte

func (b bearerToken) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearerToken) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearerToken) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
