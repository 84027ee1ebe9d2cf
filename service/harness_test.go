package service

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// testTarget is the key set every test proves with: a mimc chain of about
// a thousand constraints, so a partition takes milliseconds on the CPU.
const testTarget = 1024

var (
	keysOnce sync.Once
	keysRoot string
	keysErr  error
	testVK   *groth16.VerifyingKey
)

// testKeys makes the test key set once per test binary, in a directory the
// last test's cleanup does not remove (TestMain does).
func testKeys(t *testing.T) string {
	t.Helper()
	keysOnce.Do(func() {
		keysRoot, keysErr = os.MkdirTemp("", "cuzk-service-keys-")
		if keysErr != nil {
			return
		}
		var k *prover.Keys
		k, keysErr = prover.Setup(circuits.MiMCChain{}, testTarget)
		if keysErr == nil {
			keysErr = k.Save(prover.KeyDir(keysRoot, "mimc", testTarget))
			testVK = k.VK
		}
	})
	if keysErr != nil {
		t.Fatalf("test keys: %v", keysErr)
	}
	return keysRoot
}

func TestMain(m *testing.M) {
	code := m.Run()
	if keysRoot != "" {
		os.RemoveAll(keysRoot)
	}
	os.Exit(code)
}

// engine is a Server on a runner.Service over one emulated device, served
// on loopback (or opt's address) as the daemon serves it.
type engine struct {
	srv   *Server
	svc   *runner.Service
	st    *store.Store
	ln    *Listener
	token []byte
}

type engineOpts struct {
	token    []byte
	addr     string // default 127.0.0.1:0
	workers  int    // default 2
	mem      func() (int64, error)
	setup    SetupFunc
	tls      [2]string      // certificate and key files
	backend  prover.Backend // default prover.CPU{}
	attempts int            // a partition's attempts; default actors' default
}

func startEngine(t *testing.T, o engineOpts) *engine {
	t.Helper()
	keys := testKeys(t)
	st, err := store.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := emu.New(emu.Options{Index: 0, Capacity: 16 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if o.workers == 0 {
		o.workers = 2
	}
	m := metrics.New()
	var relay Relay
	if o.backend == nil {
		o.backend = prover.CPU{}
	}
	cfg := actors.Config{WorkersPerDevice: o.workers, MaxAttempts: o.attempts}.WithDefaults()
	svc, err := runner.StartService(runner.ServiceOptions{Backend: o.backend, Devices: []gpu.Device{dev}, Config: cfg,
		Store: st, Observer: actors.Observers{m, &relay}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Service: svc, Store: st, Backend: o.backend, Devices: []gpu.Device{dev}, Design: cfg.Design,
		Metrics: m, Keys: keys, Out: t.TempDir(), Token: o.token, MemAvailable: o.mem, Setup: o.setup})
	if err != nil {
		t.Fatal(err)
	}
	relay.Set(srv)
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	ln, err := Listen(ListenOptions{Addr: o.addr, Token: o.token, CertFile: o.tls[0], KeyFile: o.tls[1]})
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(srv.Handler(nil))
	go ln.Serve(hs)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		svc.Close(ctx)
		srv.Close(ctx)
		hs.Shutdown(ctx)
		ln.Close()
		st.Close()
		dev.Close()
	})
	return &engine{srv: srv, svc: svc, st: st, ln: ln, token: o.token}
}

// target is what a gRPC client dials for the engine.
func (e *engine) target() string {
	if e.ln.unix != "" {
		return "unix://" + e.ln.unix
	}
	return e.ln.Addr().String()
}

// grpcClient is a plain grpc-go client of the engine (no generated stubs:
// the messages are the generated ones, the calls by method name).
type grpcClient struct {
	conn  *grpc.ClientConn
	token string
}

func dial(t *testing.T, e *engine, token string) *grpcClient {
	t.Helper()
	conn, err := grpc.NewClient(e.target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &grpcClient{conn: conn, token: token}
}

const methodPrefix = "/cuzk.v1.ProvingEngine/"

func (c *grpcClient) ctx(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
}

func (c *grpcClient) call(ctx context.Context, method string, in, out proto.Message) error {
	return c.conn.Invoke(c.ctx(ctx), methodPrefix+method, in, out)
}

// watch streams a job's events to the end.
func (c *grpcClient) watch(ctx context.Context, id string) ([]*cuzkv1.JobEvent, error) {
	cs, err := c.openWatch(ctx, id)
	if err != nil {
		return nil, err
	}
	return readWatch(cs, nil)
}

// openWatch opens a WatchJob stream.
func (c *grpcClient) openWatch(ctx context.Context, id string) (grpc.ClientStream, error) {
	cs, err := c.conn.NewStream(c.ctx(ctx), &grpc.StreamDesc{ServerStreams: true}, methodPrefix+"WatchJob")
	if err != nil {
		return nil, err
	}
	if err := cs.SendMsg(&cuzkv1.WatchJobRequest{JobId: id}); err != nil {
		return nil, err
	}
	return cs, cs.CloseSend()
}

// readWatch reads a stream's events, after evs, to its end.
func readWatch(cs grpc.ClientStream, evs []*cuzkv1.JobEvent) ([]*cuzkv1.JobEvent, error) {
	for {
		ev := &cuzkv1.JobEvent{}
		if err := cs.RecvMsg(ev); err != nil {
			if err.Error() == "EOF" || err == context.Canceled {
				return evs, nil
			}
			if len(evs) > 0 && evs[len(evs)-1].Kind == "job_done" {
				return evs, nil
			}
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func exampleJob(key string, partitions uint32, seed []byte) *cuzkv1.SubmitProofRequest {
	return &cuzkv1.SubmitProofRequest{IdempotencyKey: key, Partitions: partitions,
		Circuit: &cuzkv1.SubmitProofRequest_Example{Example: &cuzkv1.ExampleCircuit{
			Keys: &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: testTarget}, Seed: seed}}}
}

// verify checks a partition's proof against the test keys.
func verify(p *cuzkv1.PartitionProof) error {
	proof := &groth16.Proof{}
	if _, err := proof.ReadFrom(bytes.NewReader(p.Proof)); err != nil {
		return fmt.Errorf("partition %d: proof: %w", p.Index, err)
	}
	pub, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return err
	}
	if err := pub.UnmarshalBinary(p.PublicInputs); err != nil {
		return fmt.Errorf("partition %d: public inputs: %w", p.Index, err)
	}
	if err := groth16.Verify(proof, testVK, pub.Vector().(fr.Vector)); err != nil {
		return fmt.Errorf("partition %d: %w", p.Index, err)
	}
	return nil
}

// httpURL is the engine's base URL for plain HTTP clients.
func (e *engine) httpURL() string { return "http://" + e.ln.Addr().String() }

// copyKeys copies a key set's files (a setup stand-in).
func copyKeys(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
