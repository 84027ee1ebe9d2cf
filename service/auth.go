package service

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"connectrpc.com/connect"
)

// MinTokenBytes is the shortest bearer token ReadToken accepts.
const MinTokenBytes = 16

// ReadToken reads a bearer token from path: the file's content without
// surrounding white space, at least MinTokenBytes long.
func ReadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read auth token: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		slog.Warn("the auth token file is readable by others than its owner: chmod 600 it", "file", path, "mode", fi.Mode().Perm())
	}
	tok := bytes.TrimSpace(b)
	if len(tok) < MinTokenBytes {
		return nil, fmt.Errorf("auth token in %s: %d bytes, want at least %d (for instance: head -c 32 /dev/urandom | base64 > %s)",
			path, len(tok), MinTokenBytes, path)
	}
	if bytes.ContainsAny(tok, " \t\r\n") {
		return nil, fmt.Errorf("auth token in %s: white space inside the token", path)
	}
	return tok, nil
}

// RequireToken wraps h so that every request must carry
// "Authorization: Bearer <token>"; an empty token lets everything through.
// A refusal is Unauthenticated in the request's protocol: gRPC, gRPC-Web and
// Connect get their own error encoding, anything else 401 with a JSON error.
func RequireToken(token []byte, h http.Handler) http.Handler {
	if len(token) == 0 {
		return h
	}
	// Compared as hashes, so that the time taken says nothing of the
	// token's length either.
	want := sha256.Sum256(token)
	errs := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r.Header.Get("Authorization"))
		if ok {
			sum := sha256.Sum256([]byte(got))
			ok = subtle.ConstantTimeCompare(sum[:], want[:]) == 1
		}
		if ok {
			h.ServeHTTP(w, r)
			return
		}
		err := errors.New("missing or wrong bearer token (Authorization: Bearer <token from --auth-token-file>)")
		if errs.IsSupported(r) {
			errs.Write(w, r, connect.NewError(connect.CodeUnauthenticated, err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("WWW-Authenticate", `Bearer realm="cuzk"`)
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
	})
}

func bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}
