package service

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/prover"
)

// A job of a circuit made outside cuzk: a key set under --keys and one
// witness per partition. The daemon keeps the witnesses beside the job's
// proofs (a resume reads them there) and proves them; a witness that does
// not fit the keys, or a key set outside --keys, is refused.
func TestOutsideCircuit(t *testing.T) {
	e := startEngine(t, engineOpts{})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := prover.KeyDir(testKeys(t), "mimc", testTarget)
	k, err := prover.Load(dir, "mimc", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ws [][]byte
	for i := range 2 {
		w, err := prover.Witness(k, []byte("outside"), i)
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, b)
	}
	job := func(key, set string, ws [][]byte) *cuzkv1.SubmitProofRequest {
		return &cuzkv1.SubmitProofRequest{IdempotencyKey: key, Circuit: &cuzkv1.SubmitProofRequest_Outside{
			Outside: &cuzkv1.OutsideCircuit{KeySet: set, Witnesses: ws}}}
	}
	for _, bad := range []struct {
		req  *cuzkv1.SubmitProofRequest
		code codes.Code
	}{
		{job("b1", "../etc", ws), codes.InvalidArgument},
		{job("b2", filepath.Base(dir), [][]byte{[]byte("not a witness")}), codes.InvalidArgument},
		{job("b3", "nope", ws), codes.FailedPrecondition},
	} {
		var out cuzkv1.SubmitProofResponse
		if err := c.call(ctx, "SubmitProof", bad.req, &out); grpcstatus.Code(err) != bad.code {
			t.Errorf("%v: got %v, want %v", bad.req.GetOutside().GetKeySet(), err, bad.code)
		}
	}
	var sub cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", job("outside-1", filepath.Base(dir), ws), &sub); err != nil {
		t.Fatal(err)
	}
	var res cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Job.State != cuzkv1.JobState_JOB_STATE_DONE || len(res.Proofs) != 2 {
		t.Fatalf("await: state %v, %d proofs", res.Job.State, len(res.Proofs))
	}
	for _, p := range res.Proofs {
		if err := verify(p); err != nil {
			t.Error(err)
		}
	}
}
