package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/prover"
)

// TestGRPCClient drives the engine with grpc-go as Curio would: submit,
// watch the job's events to its end, await the proofs and verify them;
// submit again under the same idempotency key; read the status and metrics.
func TestGRPCClient(t *testing.T) {
	e := startEngine(t, engineOpts{})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var sub cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob("curio-sector-1", 3, []byte{1, 2}), &sub); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sub.JobId, "job-") || sub.Existing {
		t.Fatalf("submit: %v", &sub)
	}
	evs, err := c.watch(ctx, sub.JobId)
	if err != nil {
		t.Fatalf("watch: %v (after %d events)", err, len(evs))
	}
	done := map[uint32]int{}
	for _, ev := range evs {
		if ev.JobId != sub.JobId {
			t.Errorf("event of job %s on %s's stream", ev.JobId, sub.JobId)
		}
		if ev.Kind == "partition_done" {
			done[ev.Partition]++
		}
	}
	// The stream may have begun after a partition finished; what it saw,
	// it saw once, and it ends with the job.
	if last := evs[len(evs)-1]; last.Kind != "job_done" || last.Count != 3 {
		t.Errorf("last event %v, want job_done with 3 proved", last)
	}
	for p, n := range done {
		if n != 1 || p > 2 {
			t.Errorf("partition %d done %d times", p, n)
		}
	}

	var res cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Job.State != cuzkv1.JobState_JOB_STATE_DONE || len(res.Proofs) != 3 || res.TimedOut {
		t.Fatalf("await: state %v, %d proofs", res.Job.State, len(res.Proofs))
	}
	for _, p := range res.Proofs {
		if err := verify(p); err != nil {
			t.Error(err)
		}
	}

	var again cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob("curio-sector-1", 3, nil), &again); err != nil {
		t.Fatal(err)
	}
	if again.JobId != sub.JobId || !again.Existing {
		t.Errorf("the same idempotency key gave %v, want job %s marked existing", &again, sub.JobId)
	}
	err = c.call(ctx, "SubmitProof", exampleJob("curio-sector-1", 4, nil), &again)
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("the key of a 3-partition job for 4 partitions: %v, want AlreadyExists", err)
	}

	var st cuzkv1.GetStatusResponse
	if err := c.call(ctx, "GetStatus", &cuzkv1.GetStatusRequest{}, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Gpus) != 1 || st.Gpus[0].VramTotal != 16<<30 || st.Gpus[0].VramFree == 0 || st.Backend != "cpu" ||
		st.Totals.JobsDone != 1 || st.Totals.PartitionsProved != 3 || st.Uptime.AsDuration() <= 0 {
		t.Errorf("status: %v", &st)
	}
	if len(st.KeySets) != 1 || st.KeySets[0].Tier != "host" || st.KeySets[0].Size == 0 || st.KeySets[0].Circuit != "mimc" {
		t.Errorf("key sets: %v", st.KeySets)
	}
	var m cuzkv1.GetMetricsResponse
	if err := c.call(ctx, "GetMetrics", &cuzkv1.GetMetricsRequest{}, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, `cuzk_partitions_total{result="done"} 3`) {
		t.Errorf("metrics lack the 3 partitions:\n%s", m.Text)
	}

	// A timeout shorter than the job answers with its state, not an error.
	var sub2 cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob("", 4, nil), &sub2); err != nil {
		t.Fatal(err)
	}
	var early cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub2.JobId, Timeout: durationpb.New(time.Millisecond)}, &early); err != nil {
		t.Fatal(err)
	}
	if !early.TimedOut || early.Job.State != cuzkv1.JobState_JOB_STATE_RUNNING || len(early.Proofs) != 0 {
		t.Errorf("await with 1ms: timed out %v, state %v", early.TimedOut, early.Job.State)
	}
	var proved cuzkv1.AwaitProofResponse
	urgent := exampleJob("", 1, nil)
	urgent.Priority = cuzkv1.Priority_PRIORITY_CRITICAL
	if err := c.call(ctx, "Prove", &cuzkv1.ProveRequest{Submit: urgent}, &proved); err != nil {
		t.Fatal(err)
	}
	if len(proved.Proofs) != 1 || verify(proved.Proofs[0]) != nil {
		t.Errorf("prove: %v", proved.Proofs)
	}
}

// TestReflection lists the services as grpcurl does.
func TestReflection(t *testing.T) {
	e := startEngine(t, engineOpts{})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := rpb.NewServerReflectionClient(c.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	if len(names) != 1 || names[0] != "cuzk.v1.ProvingEngine" {
		t.Errorf("reflection lists %v", names)
	}
}

// TestAuth: with a token, every protocol refuses a request without it or
// with a wrong one as Unauthenticated, and serves one with it.
func TestAuth(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	e := startEngine(t, engineOpts{token: []byte(token)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		name, token string
		grpc        codes.Code
		http        int
	}{
		{"no token", "", codes.Unauthenticated, http.StatusUnauthorized},
		{"wrong token", "0123456789abcdef0123456789abcdeX", codes.Unauthenticated, http.StatusUnauthorized},
		{"token prefix", token[:16], codes.Unauthenticated, http.StatusUnauthorized},
		{"right token", token, codes.OK, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := dial(t, e, c.token).call(ctx, "GetStatus", &cuzkv1.GetStatusRequest{}, &cuzkv1.GetStatusResponse{})
			if status.Code(err) != c.grpc {
				t.Errorf("gRPC: %v, want %v", err, c.grpc)
			}
			// The Connect protocol's JSON mapping, as curl sends it.
			req, _ := http.NewRequest(http.MethodPost, e.httpURL()+methodPrefix+"GetStatus", strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.http {
				t.Errorf("Connect JSON: %d %s, want %d", resp.StatusCode, body, c.http)
			}
			if c.grpc == codes.Unauthenticated && !strings.Contains(string(body), `"code":"unauthenticated"`) {
				t.Errorf("Connect JSON refusal: %s", body)
			}
		})
	}
}

// TestConnectJSON submits and awaits a job over plain HTTP with JSON, as
// `curl -H 'Content-Type: application/json'` would.
func TestConnectJSON(t *testing.T) {
	e := startEngine(t, engineOpts{})
	post := func(method, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(e.httpURL()+methodPrefix+method, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return resp.StatusCode, out
	}
	code, sub := post("SubmitProof", `{"idempotencyKey": "k1", "example": {"keys": {"circuit": "mimc", "constraints": "1024"}, "seed": "AQI="}, "partitions": 2, "priority": "PRIORITY_HIGH"}`)
	if code != http.StatusOK || sub["jobId"] == nil {
		t.Fatalf("submit: %d %v", code, sub)
	}
	code, res := post("AwaitProof", `{"jobId": "`+sub["jobId"].(string)+`", "timeout": "60s"}`)
	job, _ := res["job"].(map[string]any)
	proofs, _ := res["proofs"].([]any)
	if code != http.StatusOK || job["state"] != "JOB_STATE_DONE" || job["priority"] != "PRIORITY_HIGH" || len(proofs) != 2 {
		t.Fatalf("await: %d %v", code, res)
	}
	code, bad := post("SubmitProof", `{"example": {"keys": {"circuit": "mimc", "constraints": "1024"}}, "partitions": 100001}`)
	if code != http.StatusBadRequest || bad["code"] != "invalid_argument" {
		t.Errorf("100001 partitions: %d %v", code, bad)
	}
}

// TestRequestLimits: what a request may not ask for is refused with a code
// that says why, before anything runs.
func TestRequestLimits(t *testing.T) {
	free := int64(1 << 40)
	var setups int
	e := startEngine(t, engineOpts{mem: func() (int64, error) { return free, nil },
		setup: func(context.Context, string, int, string) error { setups++; return errors.New("no setup in this test") }})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	job := func(mod func(*cuzkv1.SubmitProofRequest)) *cuzkv1.SubmitProofRequest {
		r := exampleJob("", 1, nil)
		mod(r)
		return r
	}
	for _, c2 := range []struct {
		name string
		req  *cuzkv1.SubmitProofRequest
		code codes.Code
	}{
		{"no partitions", job(func(r *cuzkv1.SubmitProofRequest) { r.Partitions = 0 }), codes.InvalidArgument},
		{"100001 partitions", job(func(r *cuzkv1.SubmitProofRequest) { r.Partitions = 100001 }), codes.InvalidArgument},
		{"no circuit", job(func(r *cuzkv1.SubmitProofRequest) { r.Circuit = nil }), codes.InvalidArgument},
		{"unknown circuit", job(func(r *cuzkv1.SubmitProofRequest) { r.GetExample().Keys.Circuit = "nope" }), codes.InvalidArgument},
		{"zero constraints", job(func(r *cuzkv1.SubmitProofRequest) { r.GetExample().Keys.Constraints = 0 }), codes.InvalidArgument},
		{"2^40 constraints", job(func(r *cuzkv1.SubmitProofRequest) { r.GetExample().Keys.Constraints = 1 << 40 }), codes.InvalidArgument},
		{"bad priority", job(func(r *cuzkv1.SubmitProofRequest) { r.Priority = 9 }), codes.InvalidArgument},
		{"long idempotency key", job(func(r *cuzkv1.SubmitProofRequest) { r.IdempotencyKey = strings.Repeat("k", 257) }), codes.InvalidArgument},
		{"no keys made", job(func(r *cuzkv1.SubmitProofRequest) { r.GetExample().Keys.Constraints = 2048 }), codes.FailedPrecondition},
		{"outside circuit's key set not made", job(func(r *cuzkv1.SubmitProofRequest) {
			r.Circuit = &cuzkv1.SubmitProofRequest_Outside{Outside: &cuzkv1.OutsideCircuit{KeySet: "x", Witnesses: [][]byte{{1}}}}
		}), codes.FailedPrecondition},
		{"outside circuit without witnesses", job(func(r *cuzkv1.SubmitProofRequest) {
			r.Circuit = &cuzkv1.SubmitProofRequest_Outside{Outside: &cuzkv1.OutsideCircuit{KeySet: "x"}}
		}), codes.InvalidArgument},
	} {
		err := c.call(ctx, "SubmitProof", c2.req, &cuzkv1.SubmitProofResponse{})
		if status.Code(err) != c2.code {
			t.Errorf("%s: %v, want %v", c2.name, err, c2.code)
		}
	}
	for _, id := range []string{"", "no-such-job", "bad id"} {
		err := c.call(ctx, "GetJob", &cuzkv1.GetJobRequest{JobId: id}, &cuzkv1.JobStatus{})
		if code := status.Code(err); code != codes.InvalidArgument && code != codes.NotFound {
			t.Errorf("GetJob %q: %v", id, err)
		}
	}

	// Keys that do not fit the free memory are not loaded; a setup whose
	// estimate does not fit is not started.
	free = 1 << 10
	err := c.call(ctx, "SubmitProof", exampleJob("", 1, nil), &cuzkv1.SubmitProofResponse{})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("keys over free memory: %v, want ResourceExhausted", err)
	}
	err = c.call(ctx, "StartSetup", &cuzkv1.StartSetupRequest{Keys: &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: 4096}}, &cuzkv1.SetupTask{})
	if status.Code(err) != codes.ResourceExhausted || setups != 0 {
		t.Errorf("setup over free memory: %v (%d setups ran), want ResourceExhausted", err, setups)
	}
	err = c.call(ctx, "StartSetup", &cuzkv1.StartSetupRequest{Keys: &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: testTarget}}, &cuzkv1.SetupTask{})
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("setup of keys that exist: %v, want AlreadyExists", err)
	}
}

// TestSetupTask runs a setup as a background task and proves with its keys.
func TestSetupTask(t *testing.T) {
	release := make(chan struct{})
	e := startEngine(t, engineOpts{setup: func(ctx context.Context, circuit string, target int, dir string) error {
		<-release
		return copyKeys(filepath.Join(keysRoot, "mimc-1024"), dir)
	}})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: testTarget + 1}
	var task cuzkv1.SetupTask
	if err := c.call(ctx, "StartSetup", &cuzkv1.StartSetupRequest{Keys: ref}, &task); err != nil {
		t.Fatal(err)
	}
	if task.State != "running" || task.MemoryEstimate == 0 {
		t.Fatalf("task: %v", &task)
	}
	var again cuzkv1.SetupTask
	if err := c.call(ctx, "StartSetup", &cuzkv1.StartSetupRequest{Keys: ref}, &again); err != nil || again.TaskId != task.TaskId {
		t.Errorf("a second StartSetup of the same keys: %v %v, want task %s", err, &again, task.TaskId)
	}
	// While it runs, a job on those keys is refused, not made to wait.
	job := exampleJob("", 1, nil)
	job.GetExample().Keys = ref
	if err := c.call(ctx, "SubmitProof", job, &cuzkv1.SubmitProofResponse{}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("submit during setup: %v, want FailedPrecondition", err)
	}
	close(release)
	for task.State == "running" {
		time.Sleep(5 * time.Millisecond)
		if err := c.call(ctx, "GetSetup", &cuzkv1.GetSetupRequest{TaskId: task.TaskId}, &task); err != nil {
			t.Fatal(err)
		}
	}
	if task.State != "done" || task.Finished == nil {
		t.Fatalf("task: %v", &task)
	}
	var res cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "Prove", &cuzkv1.ProveRequest{Submit: job}, &res); err != nil || len(res.Proofs) != 1 {
		t.Fatalf("prove with the new keys: %v", err)
	}
}

// TestCancel: CancelProof stops a running job, which then awaits as
// cancelled with what it proved before kept; a job that has ended cannot be
// cancelled, an unknown one is not found.
func TestCancel(t *testing.T) {
	e := startEngine(t, engineOpts{workers: 1})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sub cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob("", 20, nil), &sub); err != nil {
		t.Fatal(err)
	}
	// Watched from its first event, so the stream sees the cancel.
	cs, err := c.openWatch(ctx, sub.JobId)
	if err != nil {
		t.Fatal(err)
	}
	first := &cuzkv1.JobEvent{}
	if err := cs.RecvMsg(first); err != nil {
		t.Fatal(err)
	}
	var res cuzkv1.CancelProofResponse
	if err := c.call(ctx, "CancelProof", &cuzkv1.CancelProofRequest{JobId: sub.JobId}, &res); err != nil {
		t.Fatal(err)
	}
	evs, err := readWatch(cs, []*cuzkv1.JobEvent{first})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	cancelled := 0
	for _, ev := range evs {
		if ev.Kind == "partition_cancelled" {
			cancelled++
		}
	}
	if cancelled == 0 || evs[len(evs)-1].Kind != "job_done" {
		t.Errorf("the stream of a cancelled job: %d partition_cancelled events, ends with %v", cancelled, evs[len(evs)-1])
	}
	var done cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &done); err != nil {
		t.Fatal(err)
	}
	if done.Job.State != cuzkv1.JobState_JOB_STATE_CANCELLED || done.Job.Proved == 20 || len(done.Proofs) != 0 {
		t.Errorf("after cancel: %v with %d proved, %d proofs", done.Job.State, done.Job.Proved, len(done.Proofs))
	}
	var st cuzkv1.GetStatusResponse
	if err := c.call(ctx, "GetStatus", &cuzkv1.GetStatusRequest{}, &st); err != nil || st.Totals.JobsCancelled != 1 {
		t.Errorf("status after cancel: %v %v", err, st.Totals)
	}
	err = c.call(ctx, "CancelProof", &cuzkv1.CancelProofRequest{JobId: sub.JobId}, &res)
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("cancel a cancelled job: %v, want FailedPrecondition", err)
	}
	err = c.call(ctx, "CancelProof", &cuzkv1.CancelProofRequest{JobId: "no-such-job"}, &res)
	if status.Code(err) != codes.NotFound {
		t.Errorf("cancel an unknown job: %v, want NotFound", err)
	}
}

// TestForgetJob: ForgetJob refuses a running job, removes an ended one (its
// status and proofs are gone, and its idempotency key makes a new job), and
// answers NotFound for an unknown id.
func TestForgetJob(t *testing.T) {
	e := startEngine(t, engineOpts{workers: 1})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sub cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob("forget-me", 20, nil), &sub); err != nil {
		t.Fatal(err)
	}
	var res cuzkv1.ForgetJobResponse
	if err := c.call(ctx, "ForgetJob", &cuzkv1.ForgetJobRequest{JobId: sub.JobId}, &res); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("forget a running job: %v, want FailedPrecondition", err)
	}
	var done cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &done); err != nil || done.Job.State != cuzkv1.JobState_JOB_STATE_DONE {
		t.Fatalf("await: %v %v", err, done.Job)
	}
	if err := c.call(ctx, "ForgetJob", &cuzkv1.ForgetJobRequest{JobId: sub.JobId}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Job.JobId != sub.JobId || res.Job.State != cuzkv1.JobState_JOB_STATE_DONE || res.Job.Proved != 20 {
		t.Errorf("forget answered %v, want the done job", res.Job)
	}
	if err := c.call(ctx, "GetJob", &cuzkv1.GetJobRequest{JobId: sub.JobId}, &cuzkv1.JobStatus{}); status.Code(err) != codes.NotFound {
		t.Errorf("get a forgotten job: %v, want NotFound", err)
	}
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &done); status.Code(err) != codes.NotFound {
		t.Errorf("await a forgotten job: %v, want NotFound", err)
	}
	var again cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob("forget-me", 2, nil), &again); err != nil || again.Existing {
		t.Fatalf("the forgotten job's key again: %v %v, want a new job", err, &again)
	}
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: again.JobId}, &done); err != nil || done.Job.State != cuzkv1.JobState_JOB_STATE_DONE {
		t.Fatalf("await the new job: %v %v", err, done.Job)
	}
	// The new job's directory holds its two partitions' files alone; the
	// forgotten job's twenty stay beside it.
	dir := filepath.Join(e.srv.opt.Out, again.JobId)
	if n := countFiles(t, dir); n != 4 {
		t.Errorf("the new job's directory holds %d files, want its 2 proofs and 2 publics", n)
	}
	aside, _ := filepath.Glob(dir + ".forgotten-*")
	if len(aside) != 1 || countFiles(t, aside[0]) != 40 {
		t.Errorf("the forgotten job's directory set aside as %v, want one holding its 40 files", aside)
	}
	for _, c2 := range []struct {
		id   string
		want codes.Code
	}{{"no-such-job", codes.NotFound}, {"", codes.InvalidArgument}} {
		if err := c.call(ctx, "ForgetJob", &cuzkv1.ForgetJobRequest{JobId: c2.id}, &res); status.Code(err) != c2.want {
			t.Errorf("forget %q: %v, want %v", c2.id, err, c2.want)
		}
	}
}

// failingCPU is the CPU backend whose first computes fail.
type failingCPU struct {
	prover.CPU
	failures atomic.Int32
}

func (f *failingCPU) Compute(ctx context.Context, k *prover.Keys, s prover.Staged) (*prover.Computed, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, errors.New("injected compute failure")
	}
	return f.CPU.Compute(ctx, k, s)
}

// RetryJob proves again a failed job's failed partitions, over gRPC as over
// the JSON API: the job then ends done with every proof; a job with nothing
// failed, or unknown, is refused.
func TestRetryJob(t *testing.T) {
	backend := &failingCPU{}
	backend.failures.Store(2)
	e := startEngine(t, engineOpts{workers: 1, attempts: 1, backend: backend})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sub cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob("retry-me", 3, nil), &sub); err != nil {
		t.Fatal(err)
	}
	var done cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &done); err != nil ||
		done.Job.State != cuzkv1.JobState_JOB_STATE_FAILED || done.Job.Failed != 2 || done.Job.Proved != 1 {
		t.Fatalf("first run: %v %v, want failed with 2 failed and 1 proved", err, done.Job)
	}
	var res cuzkv1.RetryJobResponse
	if err := c.call(ctx, "RetryJob", &cuzkv1.RetryJobRequest{JobId: sub.JobId}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Reopened != 2 || res.Job.Failed != 0 || res.Job.Proved < 1 {
		t.Errorf("retry answered %d reopened, %v; want 2 reopened, none failed, the proved one kept", res.Reopened, res.Job)
	}
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &done); err != nil ||
		done.Job.State != cuzkv1.JobState_JOB_STATE_DONE || len(done.Proofs) != 3 {
		t.Fatalf("after the retry: %v %v with %d proofs, want done with 3", err, done.Job, len(done.Proofs))
	}
	for _, c2 := range []struct {
		id   string
		want codes.Code
	}{{sub.JobId, codes.FailedPrecondition}, {"no-such-job", codes.NotFound}, {"", codes.InvalidArgument}} {
		if err := c.call(ctx, "RetryJob", &cuzkv1.RetryJobRequest{JobId: c2.id}, &res); status.Code(err) != c2.want {
			t.Errorf("retry %q: %v, want %v", c2.id, err, c2.want)
		}
	}
}

// TestIdempotentRace: submissions of one idempotency key at once make one
// job, which every caller is told.
func TestIdempotentRace(t *testing.T) {
	e := startEngine(t, engineOpts{})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const callers = 8
	ids := make(chan string, callers)
	errs := make(chan error, callers)
	for range callers {
		go func() {
			var sub cuzkv1.SubmitProofResponse
			if err := c.call(ctx, "SubmitProof", exampleJob("same-key", 1, nil), &sub); err != nil {
				errs <- err
				return
			}
			ids <- sub.JobId
		}()
	}
	seen := map[string]int{}
	for range callers {
		select {
		case id := <-ids:
			seen[id]++
		case err := <-errs:
			t.Fatal(err)
		}
	}
	var st cuzkv1.GetStatusResponse
	if err := c.call(ctx, "GetStatus", &cuzkv1.GetStatusRequest{}, &st); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || st.Totals.Jobs != 1 {
		t.Errorf("%d callers of one key got jobs %v; the store holds %d", callers, seen, st.Totals.Jobs)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// setAside never overwrites what an earlier setting-aside left.
func TestSetAside(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "job-1")
	if to, err := setAside(dir, time.Now()); to != "" || err != nil {
		t.Fatalf("no directory: %q %v, want nothing done", to, err)
	}
	now := time.Date(2026, 12, 7, 6, 30, 0, 0, time.UTC)
	var got []string
	for i := range 3 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "partition-00.proof"), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		to, err := setAside(dir, now)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, filepath.Base(to))
		if b, err := os.ReadFile(filepath.Join(to, "partition-00.proof")); err != nil || len(b) != 1 || b[0] != byte(i) {
			t.Errorf("set aside %d: %v %v", i, b, err)
		}
	}
	want := []string{"job-1.forgotten-20261207T063000Z", "job-1.forgotten-20261207T063000Z-2", "job-1.forgotten-20261207T063000Z-3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("set aside as %v, want %v", got, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job's directory is still there: %v", err)
	}
}

// ListJobs pages through the store's jobs oldest first; a job forgotten
// between pages moves no other across a page's edge; states filter; a
// token or state this daemon never gave is refused.
func TestListJobs(t *testing.T) {
	e := startEngine(t, engineOpts{workers: 1})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ids []string
	for i := range 5 {
		var sub cuzkv1.SubmitProofResponse
		if err := c.call(ctx, "SubmitProof", exampleJob(fmt.Sprintf("list-%d", i), 1, nil), &sub); err != nil {
			t.Fatal(err)
		}
		var done cuzkv1.AwaitProofResponse
		if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &done); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.JobId)
	}
	page := func(token string, size uint32, states ...cuzkv1.JobState) ([]string, string) {
		t.Helper()
		var res cuzkv1.ListJobsResponse
		if err := c.call(ctx, "ListJobs", &cuzkv1.ListJobsRequest{PageSize: size, PageToken: token, States: states}, &res); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range res.Jobs {
			if len(j.Partitions) != 0 {
				t.Errorf("job %s listed with its partitions", j.JobId)
			}
			got = append(got, j.JobId)
		}
		return got, res.NextPageToken
	}
	if got, next := page("", 0); strings.Join(got, " ") != strings.Join(ids, " ") || next != "" {
		t.Errorf("one page: %v (next %q), want %v", got, next, ids)
	}
	p1, next := page("", 2)
	if strings.Join(p1, " ") != strings.Join(ids[:2], " ") || next == "" {
		t.Fatalf("page 1: %v (next %q), want %v and a next page", p1, next, ids[:2])
	}
	var forgot cuzkv1.ForgetJobResponse
	if err := c.call(ctx, "ForgetJob", &cuzkv1.ForgetJobRequest{JobId: ids[1]}, &forgot); err != nil {
		t.Fatal(err)
	}
	p2, next := page(next, 2)
	if strings.Join(p2, " ") != strings.Join(ids[2:4], " ") || next == "" {
		t.Fatalf("page 2 after the first page's last job was forgotten: %v (next %q), want %v", p2, next, ids[2:4])
	}
	if p3, next := page(next, 2); strings.Join(p3, " ") != ids[4] || next != "" {
		t.Errorf("page 3: %v (next %q), want [%s] and no next page", p3, next, ids[4])
	}
	if got, _ := page("", 0, cuzkv1.JobState_JOB_STATE_FAILED, cuzkv1.JobState_JOB_STATE_RUNNING); len(got) != 0 {
		t.Errorf("failed or running: %v, want none", got)
	}
	if got, _ := page("", 0, cuzkv1.JobState_JOB_STATE_DONE); len(got) != 4 {
		t.Errorf("done: %v, want the 4 jobs kept", got)
	}
	for _, req := range []*cuzkv1.ListJobsRequest{{PageToken: "not-a-token"}, {States: []cuzkv1.JobState{99}}, {States: []cuzkv1.JobState{0}}} {
		if err := c.call(ctx, "ListJobs", req, &cuzkv1.ListJobsResponse{}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("list %v: %v, want InvalidArgument", req, err)
		}
	}
}
