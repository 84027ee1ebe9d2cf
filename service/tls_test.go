package service

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cuzk test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestTLS serves over TLS with a token: a gRPC client that trusts the
// certificate and carries the token is served, one without the token is
// refused, and a clear-text client gets nowhere.
func TestTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	const token = "0123456789abcdef0123456789abcdef"
	e := startEngine(t, engineOpts{token: []byte(token), tls: [2]string{certFile, keyFile}})
	if got := e.ln.URL(); got[:8] != "https://" {
		t.Errorf("URL %s, want https", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(e.target(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for tok, want := range map[string]codes.Code{token: codes.OK, "": codes.Unauthenticated} {
		c := &grpcClient{conn: conn, token: tok}
		err := c.call(ctx, "GetStatus", &cuzkv1.GetStatusRequest{}, &cuzkv1.GetStatusResponse{})
		if status.Code(err) != want {
			t.Errorf("over TLS with token %q: %v, want %v", tok, err, want)
		}
	}
	plain := dial(t, e, token)
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if err := plain.call(short, "GetStatus", &cuzkv1.GetStatusRequest{}, &cuzkv1.GetStatusResponse{}); err == nil {
		t.Error("a clear-text client was served by the TLS listener")
	}
}
