package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDaemonFlagsRefused: values that make no sense stop the daemon at
// start with an error naming the flag, before it opens anything.
func TestDaemonFlagsRefused(t *testing.T) {
	st := filepath.Join(t.TempDir(), "store")
	dir := t.TempDir()
	n := 0
	config := func(body string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("%d.toml", n))
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--drain-timeout", "-1s"}, "--drain-timeout -1s"},
		{[]string{"--drain-timeout", "0s"}, "--drain-timeout 0s"},
		{[]string{"--evict-idle", "-1m"}, "--evict-idle -1m0s"},
		{[]string{"--forget-ended", "-1h"}, "--forget-ended -1h0m0s"},
		{[]string{"--config", config(`forget-ended = "-2h"`)}, "--forget-ended -2h0m0s"},
		{[]string{"--workers", "0"}, "--workers 0"},
		{[]string{"--max-attempts", "0"}, "--max-attempts 0"},
		{[]string{"--retry-backoff", "-5ms"}, "--retry-backoff -5ms"},
		{[]string{"--listen", "0.0.0.0:0"}, "is not loopback: give --auth-token-file"},
		{[]string{"--listen", ":0"}, "is not loopback"},
		{[]string{"--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--auth-token-file", filepath.Join(dir, "none")}, "--auth-token-file"},
		{[]string{"--config", filepath.Join(dir, "none.toml")}, "--config"},
		{[]string{"--config", config(`colour = "blue"`)}, `unknown key "colour"`},
		{[]string{"--config", config("[daemon]\nlisten = \"x\"")}, `unknown key "daemon"`},
		{[]string{"--config", config(`drain-timeout = "-1s"`)}, "--drain-timeout -1s"},
		{[]string{"--config", config(`workers = "many"`)}, "workers"},
		{[]string{"--config", config(`listen = "0.0.0.0:0"`)}, "is not loopback"},
		{[]string{"--host-mem-limit", "lots"}, "--host-mem-limit"},
		{[]string{"--config", config(`host-mem-limit = "200%"`)}, "--host-mem-limit"},
		{[]string{"--config", config(`synth-workers = -1`)}, "--synth-workers -1"},
	} {
		args := append([]string{"daemon", "--store", st, "--backend", "cpu"}, c.args...)
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	if _, _, err := run(t, "daemon", "--backend", "cpu"); err == nil || !strings.Contains(err.Error(), "--store is required") {
		t.Errorf("no store: %v", err)
	}
}

// TestDaemonConfig starts the daemon from a config file whose values the
// command line overrides, with a bearer token: requests without it are
// refused.
func TestDaemonConfig(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cuzk.toml")
	body := `# cuzk daemon settings
store = "` + filepath.Join(dir, "store") + `"
keys = "` + filepath.Join(dir, "keys") + `"
auth-token-file = "` + token + `"
listen = "127.0.0.1:1"      # overridden by the command line
drain-timeout = "5s"
evict-idle = "0s"
forget-ended = "168h"
devices = [0]
max-attempts = 2
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config", cfg)
	if !strings.Contains(d.log.String(), "auth=true") {
		t.Errorf("the daemon does not say it requires a token:\n%s", d.log)
	}
	resp, err := http.Get(d.url + "/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/jobs without the token: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", d.url+"/v1/jobs", nil)
	req.Header.Set("Authorization", "Bearer 0123456789abcdef0123456789abcdef")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/jobs with the token: %d, want 200", resp.StatusCode)
	}
}
