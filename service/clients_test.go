package service

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
)

// TestProtocols: the generated Connect client reaches the engine in each
// protocol the one handler serves, over plain HTTP/1.1, with the token.
func TestProtocols(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	e := startEngine(t, engineOpts{token: []byte(token)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, opt := range map[string]connect.ClientOption{
		"connect-proto": connect.WithClientOptions(),
		"connect-json":  connect.WithProtoJSON(),
		"grpc-web":      connect.WithGRPCWeb(),
	} {
		c := cuzkv1connect.NewProvingEngineClient(http.DefaultClient, e.httpURL(), opt)
		req := connect.NewRequest(&cuzkv1.GetStatusRequest{})
		if _, err := c.GetStatus(ctx, req); connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("%s without the token: %v, want Unauthenticated", name, err)
		}
		req.Header().Set("Authorization", "Bearer "+token)
		res, err := c.GetStatus(ctx, req)
		if err != nil || res.Msg.Backend != "cpu" {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestKeysPreloadEvict: PreloadKeys loads a key set, which GetStatus then
// shows in host memory; EvictKeys with no idle time forgets it.
func TestKeysPreloadEvict(t *testing.T) {
	e := startEngine(t, engineOpts{})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tier := func() string {
		t.Helper()
		var st cuzkv1.GetStatusResponse
		if err := c.call(ctx, "GetStatus", &cuzkv1.GetStatusRequest{}, &st); err != nil || len(st.KeySets) != 1 {
			t.Fatalf("status: %v %v", err, st.KeySets)
		}
		return st.KeySets[0].Tier
	}
	if got := tier(); got != "disk" {
		t.Errorf("before preload: tier %s, want disk", got)
	}
	ref := &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: testTarget}
	var pre cuzkv1.PreloadKeysResponse
	if err := c.call(ctx, "PreloadKeys", &cuzkv1.PreloadKeysRequest{Keys: []*cuzkv1.KeySetRef{ref}}, &pre); err != nil {
		t.Fatal(err)
	}
	if len(pre.KeySets) != 1 || pre.KeySets[0].KeyHash == "" || pre.KeySets[0].Tier != "host" {
		t.Errorf("preload: %v", pre.KeySets)
	}
	if got := tier(); got != "host" {
		t.Errorf("after preload: tier %s, want host", got)
	}
	var ev cuzkv1.EvictKeysResponse
	if err := c.call(ctx, "EvictKeys", &cuzkv1.EvictKeysRequest{}, &ev); err != nil || ev.KeySets != 1 {
		t.Errorf("evict: %v, %d key sets", err, ev.KeySets)
	}
	if got := tier(); got != "disk" {
		t.Errorf("after evict: tier %s, want disk", got)
	}
	missing := &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: 4096}
	err := c.call(ctx, "PreloadKeys", &cuzkv1.PreloadKeysRequest{Keys: []*cuzkv1.KeySetRef{missing}}, &pre)
	if err == nil {
		t.Error("preload of keys never made succeeded")
	}
}
