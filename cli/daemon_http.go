package cli

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/cuzk/cuzk/actors"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/service"
	"github.com/cuzk/cuzk/store"
)

// daemonAPI is the daemon's JSON API under /v1: thin aliases of the
// ProvingEngine's calls, kept for the clients written against it.
type daemonAPI struct {
	svc *runner.Service
	api *service.Server
}

// maxRequestBytes bounds a request body: a submission is a few fields.
const maxRequestBytes = 1 << 16

func (a *daemonAPI) routes(metricsHandler http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", a.submit)
	mux.HandleFunc("GET /v1/jobs", a.list)
	mux.HandleFunc("GET /v1/jobs/{id}", a.status)
	mux.HandleFunc("GET /v1/jobs/{id}/wait", a.wait)
	mux.HandleFunc("POST /v1/jobs/{id}/retry", a.retry)
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", a.cancel)
	mux.HandleFunc("DELETE /v1/jobs/{id}", a.forget)
	mux.Handle("GET /metrics", metricsHandler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { unmatched(mux, w, r) })
	return mux
}

// unmatched answers what no route takes, in JSON like every other error: 405
// with Allow when the path has routes for other methods, else 404. (The
// catch-all route keeps the mux from answering in plain text.)
func unmatched(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, fmt.Errorf("%s %s: no such endpoint (the API is cuzk.v1.ProvingEngine over gRPC or Connect, and POST /v1/jobs, GET /v1/jobs, GET /v1/jobs/{id}, GET /v1/jobs/{id}/wait, POST /v1/jobs/{id}/retry, POST /v1/jobs/{id}/cancel, DELETE /v1/jobs/{id}, GET /metrics)", r.Method, r.URL.Path))
}

// submitRequest is the body of POST /v1/jobs.
type submitRequest struct {
	Circuit string `json:"circuit"`
	// Constraints is the target per partition: a number, or a string as
	// --constraints takes it ("16K", "2^20").
	Constraints    json.RawMessage `json:"constraints"`
	Partitions     int             `json:"partitions"`
	Priority       string          `json:"priority"` // default NORMAL
	Seed           string          `json:"seed"`     // hex; default random
	IdempotencyKey string          `json:"idempotency_key"`
	// SetupIfMissing is refused: a setup never runs inside a request.
	SetupIfMissing bool `json:"setup_if_missing"`
}

// submitResponse is the answer to POST /v1/jobs.
type submitResponse struct {
	ID            string `json:"job_id"`
	QueuePosition uint32 `json:"queue_position"`
	Existing      bool   `json:"existing,omitempty"`
}

func (a *daemonAPI) submit(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", maxRequestBytes))
			return
		}
		writeError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, errors.New("request body: more than one JSON value"))
		return
	}
	msg, err := submitMessage(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	resp, err := a.api.SubmitProof(r.Context(), connect.NewRequest(msg))
	if err != nil {
		writeError(w, httpStatus(connect.CodeOf(err)), err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+resp.Msg.JobId)
	writeJSON(w, http.StatusAccepted, submitResponse{ID: resp.Msg.JobId, QueuePosition: resp.Msg.QueuePosition, Existing: resp.Msg.Existing})
}

// submitMessage is the SubmitProof request a POST /v1/jobs body asks for.
func submitMessage(req submitRequest) (*cuzkv1.SubmitProofRequest, error) {
	if req.SetupIfMissing {
		return nil, errors.New(`"setup_if_missing": a setup never runs inside a request: make the keys with cuzk setup, or the StartSetup call`)
	}
	if req.Circuit == "" {
		return nil, errors.New(`"circuit" is required (mimc, porep, sha or porep-sha)`)
	}
	target, err := parseConstraints(req.Constraints)
	if err != nil {
		return nil, err
	}
	if req.Partitions < 1 || req.Partitions > store.MaxPartitions {
		return nil, fmt.Errorf(`"partitions" must be 1 to %d, got %d`, store.MaxPartitions, req.Partitions)
	}
	prio := cuzkv1.Priority_PRIORITY_NORMAL
	if req.Priority != "" {
		p, err := actors.ParsePriority(req.Priority)
		if err != nil {
			return nil, fmt.Errorf(`"priority": %w`, err)
		}
		prio = cuzkv1.Priority(int(p) + 1)
	}
	var seed []byte
	if req.Seed != "" {
		if seed, err = hex.DecodeString(req.Seed); err != nil || len(seed) == 0 {
			return nil, fmt.Errorf(`"seed" %q: want hex digits`, req.Seed)
		}
	}
	return &cuzkv1.SubmitProofRequest{IdempotencyKey: req.IdempotencyKey, Partitions: uint32(req.Partitions), Priority: prio,
		Circuit: &cuzkv1.SubmitProofRequest_Example{Example: &cuzkv1.ExampleCircuit{
			Keys: &cuzkv1.KeySetRef{Circuit: req.Circuit, Constraints: uint64(target)}, Seed: seed}}}, nil
}

// httpStatus is the status the /v1 API answers a ProvingEngine error with.
func httpStatus(code connect.Code) int {
	switch code {
	case connect.CodeInvalidArgument:
		return http.StatusBadRequest
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodeAlreadyExists:
		return http.StatusConflict
	case connect.CodeFailedPrecondition:
		return http.StatusUnprocessableEntity // no keys
	case connect.CodeResourceExhausted, connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	case connect.CodeUnimplemented:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

func parseConstraints(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New(`"constraints" is required (a number, or a string such as "16K" or "2^20")`)
	}
	var s string
	if raw[0] != '"' {
		s = string(raw)
	} else if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf(`"constraints": %w`, err)
	}
	n, err := parseCount(s)
	if err != nil {
		return 0, fmt.Errorf(`"constraints": %w`, err)
	}
	return n, nil
}

func (a *daemonAPI) list(w http.ResponseWriter, r *http.Request) {
	jobs, err := a.svc.Jobs()
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jobs)
}

func (a *daemonAPI) status(w http.ResponseWriter, r *http.Request) {
	js, err := a.svc.Status(r.PathValue("id"))
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, js)
}

func (a *daemonAPI) wait(w http.ResponseWriter, r *http.Request) {
	js, err := a.svc.Wait(r.Context(), r.PathValue("id"))
	if r.Context().Err() != nil {
		return // the client is gone
	}
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, js)
}

// retry proves again a finished job's failed partitions.
func (a *daemonAPI) retry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := a.svc.Retry(id)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	slog.Info("retrying failed partitions", "job", id, "partitions", n)
	js, err := a.svc.Status(id)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, js)
}

// cancel stops a job (CancelProof) and answers with its status then.
func (a *daemonAPI) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := a.svc.Cancel(id); err != nil {
		writeServiceError(w, err)
		return
	}
	slog.Info("job cancelled", "job", id)
	js, err := a.svc.Status(id)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, js)
}

// forget removes an ended job from the store (ForgetJob) and answers with
// its status as it was.
func (a *daemonAPI) forget(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	js, err := a.svc.Forget(id)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	slog.Info("job forgotten", "job", id, "state", js.State)
	writeJSON(w, http.StatusOK, js)
}

// writeServiceError answers with the status that err's kind calls for.
func writeServiceError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, store.ErrInvalid), errors.Is(err, runner.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, runner.ErrExists), errors.Is(err, runner.ErrNotRunning), errors.Is(err, runner.ErrBusy),
		errors.Is(err, runner.ErrNothingToRetry), errors.Is(err, runner.ErrFinished), errors.Is(err, store.ErrTransition):
		code = http.StatusConflict
	case errors.Is(err, runner.ErrClosed):
		code = http.StatusServiceUnavailable
	case errors.Is(err, runner.ErrTooLarge), errors.Is(err, runner.ErrHostTooLarge):
		code = http.StatusUnprocessableEntity // does not fit this daemon's device or host memory
	}
	writeError(w, code, err)
}

type errorResponse struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, err error) {
	var ce *connect.Error
	if errors.As(err, &ce) {
		err = errors.New(ce.Message())
	}
	writeJSON(w, code, errorResponse{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := printJSON(w, v); err != nil {
		slog.Debug("write response", "err", err)
	}
}
