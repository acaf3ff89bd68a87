package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"math/bits"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/service/internal/auth"
	"github.com/crew-go/crew/service/internal/kinds"
)

// API serves crewd's endpoints.
type API struct {
	Pool           *crew.Pool
	Jobs           jobs.Runner
	MaxNumbers     int
	MaxBody        int64
	RequestTimeout time.Duration
	RetryAfter     time.Duration
	Log            *slog.Logger
	Metrics        *Metrics // may be nil

	// Auth, if not nil, holds the tokens every /v1/ route asks for, each
	// route a scope (see Handler); nil serves every caller, as crewd does
	// on loopback without -api-tokens, or with -insecure-no-auth.
	Auth *auth.File

	// UI, if not nil, serves crewd's web UI under /ui/ (package ui).
	UI http.Handler

	// LocalOnly, with no Auth (crewd on loopback without tokens), refuses
	// a request whose Host is not this machine's (localhost, a loopback
	// address): a web page whose name an attacker points at 127.0.0.1
	// (DNS rebinding) reaches no job.
	LocalOnly bool

	// Ready, if not nil, says why the pod cannot take work now (its NATS
	// connection is down): /readyz answers 503 with the reason meanwhile.
	Ready func() error

	// Live, if not nil, says why the process is of no more use (its NATS
	// connection closed for good): /healthz answers 503 with the reason,
	// so that the liveness probe restarts it.
	Live func() error

	// Factorial computes the numbers' factorials for the online mode:
	// crew by default; the benchmark swaps in errgroup and a goroutine per
	// number.
	Factorial func(ctx context.Context, pool *crew.Pool, numbers []int) ([]uint64, error)

	stopping atomic.Bool

	cutOnce   sync.Once
	cutCtx    context.Context // done once CutBodies is called
	cancelCut context.CancelFunc
}

// SetStopping makes /readyz fail from now on, and every answer carry
// Connection: close, so that no keep-alive connection outlives the
// shutdown delay: a request sent as the listener closes is then on a new
// connection, which the stop answers or refuses at connect (see the app's
// gate). The first step of a stop.
func (a *API) SetStopping() { a.stopping.Store(true) }

// CutBodies ends every body read in progress now, and every one that
// starts later, with 408: a client that sent its headers and not its body
// must not hold the listener's drain. The stop calls it as the listener
// closes.
func (a *API) CutBodies() {
	a.cutContext()
	a.cancelCut()
}

func (a *API) cutContext() context.Context {
	a.cutOnce.Do(func() { a.cutCtx, a.cancelCut = context.WithCancel(context.Background()) })
	return a.cutCtx
}

// Handler returns the routes, with request ids, panic recovery, metrics
// and a debug access log around them, and the token and scope each asks
// for when Auth is set (access.go).
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range a.routes() {
		allow := strings.Join(slices.Sorted(maps.Keys(rt.methods)), ", ")
		guard := guarded(rt.methods)
		mux.Handle(rt.pattern, a.wrap(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			a.serve(w, r, rt.pattern, allow, guard, rt.methods)
		}))
	}
	if a.UI != nil {
		mux.Handle("/ui/", a.wrap("/ui/", a.forms(a.UI)))
	}
	mux.Handle("/", a.wrap("other", func(w http.ResponseWriter, r *http.Request) {
		a.fail(w, r, http.StatusNotFound, "no such endpoint: "+quoteShort(r.URL.Path))
	}))
	return mux
}

// route is a path pattern and its methods' endpoints.
type route struct {
	pattern string
	methods map[string]endpoint
}

// routes are the API's routes (openapi.json describes each).
func (a *API) routes() []route {
	return []route{
		{"/v1/factorial", map[string]endpoint{http.MethodPost: computes(a.factorial)}},
		{"/v1/jobs", map[string]endpoint{http.MethodPost: submits(a.postJob), http.MethodGet: reads(a.listJobs)}},
		// "counts" and "ends" are no job ids (jobs.ValidID): the literal
		// routes take them.
		{"/v1/jobs/counts", map[string]endpoint{http.MethodGet: reads(a.jobCounts)}},
		{"/v1/jobs/ends", map[string]endpoint{http.MethodGet: reads(a.jobEnds)}},
		{"/v1/jobs/{id}", map[string]endpoint{http.MethodGet: reads(a.getJob), http.MethodDelete: admins(a.cancelJob)}},
		{"/v1/jobs/{id}/retry", map[string]endpoint{http.MethodPost: admins(a.retryJob)}},
		{"/v1/jobs/{id}/after", map[string]endpoint{http.MethodPost: submits(a.addAfter)}},
		{"/v1/jobs/{id}/record", map[string]endpoint{http.MethodDelete: admins(a.deleteJob)}},
		{"/v1/workflows", map[string]endpoint{http.MethodPost: submits(a.postWorkflow)}},
		{"/v1/workflows/{id}", map[string]endpoint{http.MethodGet: reads(a.getWorkflow)}},
		{"/v1/workflows/{id}/cancel", map[string]endpoint{http.MethodPost: admins(a.cancelWorkflow)}},
		{"/v1/workflows/{id}/retry", map[string]endpoint{http.MethodPost: admins(a.retryWorkflow)}},
		{"/v1/periodic", map[string]endpoint{http.MethodGet: reads(a.listPeriodic)}},
		{"/v1/periodic/{name}", map[string]endpoint{http.MethodGet: reads(a.getPeriodic), http.MethodPut: admins(a.putPeriodic), http.MethodDelete: admins(a.deletePeriodic)}},
		{"/v1/queues", map[string]endpoint{http.MethodGet: reads(a.listQueues)}},
		{"/v1/replicas", map[string]endpoint{http.MethodGet: reads(a.listReplicas)}},
		{"/v1/queues/{name}/pause", map[string]endpoint{http.MethodPost: admins(a.pauseQueue)}},
		{"/v1/queues/{name}/resume", map[string]endpoint{http.MethodPost: admins(a.resumeQueue)}},
		{"/v1/openapi.json", map[string]endpoint{http.MethodGet: probe(a.openapi)}},
		{"/healthz", map[string]endpoint{http.MethodGet: probe(a.healthz)}},
		{"/readyz", map[string]endpoint{http.MethodGet: probe(a.readyz)}},
	}
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	if a.Live != nil {
		if err := a.Live(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "failing", "reason": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	if a.stopping.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "stopping"})
		return
	}
	if a.Ready != nil {
		if err := a.Ready(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

type factorialRequest struct {
	Numbers numbers `json:"numbers"`
}

// factorialResponse's Sum is a JSON number; a sum past the uint64 range
// (more than seven factorials of 20) is written exactly, from 128 bits.
type factorialResponse struct {
	Sum   json.Number `json:"sum"`
	Count int         `json:"count"`
}

// factorial is the goapp worker-pool article's load test, answering the
// sum of the numbers' factorials: the numbers are split by crew.Map among
// at most the pool's bound of participants.
func (a *API) factorial(w http.ResponseWriter, r *http.Request) {
	req := factorialRequest{Numbers: numbers{max: a.MaxNumbers}}
	if !a.decode(w, r, &req, factorialFields) {
		return
	}
	nums := req.Numbers.v
	if len(nums) == 0 {
		// {}, null, {"numbers":null} and {"numbers":[]} alike: a batch
		// that computes nothing is a client's mistake, not a request.
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf(`"numbers" is required: an array of 1 to %d integers from 0 to %d`, a.MaxNumbers, kinds.MaxFactorial))
		return
	}
	for i, n := range nums {
		if n < 0 || n > kinds.MaxFactorial {
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("numbers[%d] = %d: want 0 to %d (%d! overflows a uint64)", i, n, kinds.MaxFactorial, kinds.MaxFactorial+1))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.RequestTimeout)
	defer cancel()
	compute := a.Factorial
	if compute == nil {
		compute = Factorials
	}
	fs, err := compute(ctx, a.Pool, nums)
	if err != nil {
		a.poolError(w, r, err)
		return
	}
	var hi, lo uint64
	for _, f := range fs {
		var carry uint64
		lo, carry = bits.Add64(lo, f, 0)
		hi += carry
	}
	sum := json.Number(strconv.FormatUint(lo, 10))
	if hi != 0 {
		v := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		sum = json.Number(v.Or(v, new(big.Int).SetUint64(lo)).String())
	}
	writeJSON(w, http.StatusOK, factorialResponse{Sum: sum, Count: len(fs)})
}

// Factorials computes each number's factorial as a task of one group on
// pool, waiting for queue room as long as ctx allows.
func Factorials(ctx context.Context, pool *crew.Pool, numbers []int) ([]uint64, error) {
	return crew.Map(ctx, pool, numbers, factorialTask, crew.NameTasks("factorial"))
}

func factorialTask(_ context.Context, n int) (uint64, error) { return kinds.Of(n), nil }

func (a *API) postJob(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if !a.decode(w, r, &body, jobFields) {
		return
	}
	spec, err := jobSpec(body)
	if err != nil {
		a.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	spec.Submitter = submitter(r)
	var (
		rec      jobs.Record
		replayed bool
	)
	if key, present, kerr := idempotencyKey(r.Header); kerr != nil {
		a.fail(w, r, http.StatusBadRequest, kerr.Error())
		return
	} else if present {
		keyed, ok := a.Jobs.(jobs.KeyedRunner)
		if !ok {
			a.fail(w, r, http.StatusNotImplemented, "Idempotency-Key: not taken by this job store")
			return
		}
		rec, replayed, err = keyed.SubmitOnce(r.Context(), spec, key)
	} else {
		rec, err = a.Jobs.Submit(r.Context(), spec)
	}
	var invalid *jobs.InvalidError
	switch {
	case errors.As(err, &invalid):
		a.fail(w, r, http.StatusBadRequest, invalid.Error())
		return
	case errors.Is(err, jobs.ErrKeyReused):
		// The IETF draft's answer to a key reused with another payload.
		a.fail(w, r, http.StatusUnprocessableEntity, err.Error())
		return
	case errors.Is(err, jobs.ErrFull), errors.Is(err, jobs.ErrUnavailable):
		a.unavailable(w, r, err)
		return
	case err != nil:
		a.poolError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+rec.ID)
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	answer := map[string]any{"id": rec.ID, "state": rec.State}
	if !rec.RunAt.IsZero() {
		answer["run_at"] = rec.RunAt // when a scheduled job is due
	}
	writeJSON(w, http.StatusAccepted, answer)
}

// jobSpec makes a job's spec of a POST /v1/jobs body: its "kind", its
// optional "timeout", "max_attempts", "queue", "priority", "run_at" or
// "delay", "after" and "even_on_failure", and the rest of its
// fields as the kind's arguments,
// which the kind checks (Submit's *jobs.InvalidError names the field at
// fault).
func jobSpec(body map[string]json.RawMessage) (jobs.Spec, error) {
	var spec jobs.Spec
	if raw, ok := body["kind"]; ok {
		if err := json.Unmarshal(raw, &spec.Kind); err != nil {
			return spec, fmt.Errorf(`"kind": want %s, got %.40s`, jobFields.want["kind"], raw)
		}
		delete(body, "kind")
	}
	if raw, ok := body["timeout"]; ok {
		if err := json.Unmarshal(raw, &spec.Timeout); err != nil {
			return spec, fmt.Errorf(`"timeout": want %s, got %.40s`, jobFields.want["timeout"], raw)
		}
		delete(body, "timeout")
	}
	if err := jobTime(body, &spec); err != nil {
		return spec, err
	}
	if raw, ok := body["queue"]; ok {
		if err := json.Unmarshal(raw, &spec.Queue); err != nil {
			return spec, fmt.Errorf(`"queue": want %s, got %.40s`, jobFields.want["queue"], raw)
		}
		if err := jobs.CheckQueue(spec.Queue); err != nil {
			return spec, err
		}
		delete(body, "queue")
	}
	if raw, ok := body["priority"]; ok {
		// As max_attempts: a value given is a priority, not the spec's 0.
		if string(raw) == "null" || json.Unmarshal(raw, &spec.Priority) != nil {
			return spec, fmt.Errorf(`"priority": want %s, got %.40s`, jobFields.want["priority"], raw)
		}
		if spec.Priority < 1 || spec.Priority > jobs.MaxPriority {
			return spec, fmt.Errorf(`"priority" %d: want %s`, spec.Priority, jobFields.want["priority"])
		}
		delete(body, "priority")
	}
	if raw, ok := body["max_attempts"]; ok {
		// A spec's 0 leaves the bound to the kind or the runner; in the API
		// that is the field left out, so a value given must be a bound.
		if string(raw) == "null" || json.Unmarshal(raw, &spec.MaxAttempts) != nil {
			return spec, fmt.Errorf(`"max_attempts": want %s, got %.40s`, jobFields.want["max_attempts"], raw)
		}
		if spec.MaxAttempts < 1 || spec.MaxAttempts > jobs.MaxMaxAttempts {
			return spec, fmt.Errorf(`"max_attempts" %d: want 1 to %d`, spec.MaxAttempts, jobs.MaxMaxAttempts)
		}
		delete(body, "max_attempts")
	}
	if raw, ok := body["after"]; ok {
		if string(raw) == "null" || json.Unmarshal(raw, &spec.After) != nil {
			return spec, fmt.Errorf(`"after": want %s, got %.40s`, jobFields.want["after"], raw)
		}
		delete(body, "after")
	}
	if raw, ok := body["even_on_failure"]; ok {
		if json.Unmarshal(raw, &spec.EvenOnFailure) != nil {
			return spec, fmt.Errorf(`"even_on_failure": want %s, got %.40s`, jobFields.want["even_on_failure"], raw)
		}
		delete(body, "even_on_failure")
	}
	if len(body) > 0 {
		args, err := json.Marshal(body)
		if err != nil {
			return spec, err
		}
		spec.Args = args
	}
	return spec, nil
}

// jobTime reads when a job is due: "run_at", a time in RFC 3339, or
// "delay", a duration from now; not both.
func jobTime(body map[string]json.RawMessage, spec *jobs.Spec) error {
	rawAt, hasAt := body["run_at"]
	rawDelay, hasDelay := body["delay"]
	delete(body, "run_at")
	delete(body, "delay")
	switch {
	case hasAt && hasDelay:
		return errors.New(`"run_at" and "delay": give one or the other`)
	case hasAt:
		var at string
		if err := json.Unmarshal(rawAt, &at); err != nil {
			return fmt.Errorf(`"run_at": want %s, got %.40s`, jobFields.want["run_at"], rawAt)
		}
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return fmt.Errorf(`"run_at": want %s, got %.40q`, jobFields.want["run_at"], at)
		}
		spec.RunAt = t
	case hasDelay:
		var d jobs.Duration
		if err := json.Unmarshal(rawDelay, &d); err != nil {
			return fmt.Errorf(`"delay": want %s, got %.40s`, jobFields.want["delay"], rawDelay)
		}
		if d < 0 {
			return fmt.Errorf(`"delay" %v: want 0 or more`, time.Duration(d))
		}
		spec.Delay = d // from the submit: a keyed request repeated compares the delay
	}
	return nil
}

// idempotencyKey reads the Idempotency-Key header (draft-ietf-httpapi-
// idempotency-key-header): a structured-field string, "...", or for
// clients that send it bare, the token as it is. Its content is checked by
// jobs.CheckKey.
func idempotencyKey(h http.Header) (key string, present bool, err error) {
	vs := h.Values("Idempotency-Key")
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, errors.New("Idempotency-Key: one header, one key")
	}
	key = vs[0]
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
		if strings.ContainsAny(key, "\\\"") {
			return "", true, errors.New(`Idempotency-Key: a quoted key without escapes, such as "8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		}
	}
	if err := jobs.CheckKey(key); err != nil {
		return "", true, errors.New("Idempotency-Key: " + strings.TrimPrefix(err.Error(), "invalid job: "))
	}
	return key, true, nil
}

// unavailable answers 503 with Retry-After: the job store cannot take or
// read a record now.
func (a *API) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Retry-After", a.retryAfter())
	a.fail(w, r, http.StatusServiceUnavailable, err.Error())
}

func (a *API) getJob(w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	rec, err := a.Jobs.Get(r.Context(), id)
	a.jobAnswer(w, r, id, rec, err)
}

// jobAnswer answers a job's record, or the store's error about job id:
// 409 naming the state of a job that has ended (a cancel), 404 for an
// unknown one, 503 while the store is out.
func (a *API) jobAnswer(w http.ResponseWriter, r *http.Request, id string, rec jobs.Record, err error) {
	var ended *jobs.EndedError
	switch {
	case errors.As(err, &ended):
		a.fail(w, r, http.StatusConflict, fmt.Sprintf("job %s has ended: %s", id, ended.State))
	case errors.Is(err, jobs.ErrNotFound):
		a.fail(w, r, http.StatusNotFound, "no job "+strconv.Quote(id)+" (unknown, or its record was evicted)")
	case errors.Is(err, jobs.ErrUnavailable):
		a.unavailable(w, r, err)
	case err != nil:
		a.poolError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, rec)
	}
}

// jobID is the request's job id, or false with a 404 answered: an id is
// checked before any store is asked, since it goes into a NATS subject and
// a long one would cost the connection.
func (a *API) jobID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !jobs.ValidID(id) {
		a.fail(w, r, http.StatusNotFound, fmt.Sprintf("no job %s: a job id is %d lowercase hex digits", quoteShort(id), jobs.IDLen))
		return "", false
	}
	return id, true
}

// cancelJob cancels a job not yet ended: 200 with its record (canceled,
// and canceled_while the state it was in); the same again for a job
// canceled already; 409 naming the state of one that has ended.
func (a *API) cancelJob(w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	canceler, ok := a.Jobs.(jobs.Canceler)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "cancel: not taken by this job store")
		return
	}
	rec, _, err := canceler.Cancel(r.Context(), id)
	a.jobAnswer(w, r, id, rec, err)
}

// deleteJob deletes an ended job: 200 {"id", "deleted": true, "state"}
// (the state it ended in); 404 for one unknown or deleted already; 409
// naming the state of one not ended (cancel it first).
func (a *API) deleteJob(w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	d, ok := a.Jobs.(jobs.Deleter)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "delete: not taken by this job store")
		return
	}
	rec, err := d.Delete(r.Context(), id)
	var live *jobs.LiveError
	if errors.As(err, &live) {
		a.fail(w, r, http.StatusConflict, fmt.Sprintf("job %s has not ended: %s (cancel it first)", id, live.State))
		return
	}
	if err != nil {
		a.jobAnswer(w, r, id, rec, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true, "state": rec.State})
}

// quoteShort quotes s, cut to its first 32 bytes: an answer does not echo
// a hostile client's kilobytes.
func quoteShort(s string) string {
	if len(s) > 32 {
		return strconv.Quote(s[:32]) + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// poolError answers for a task the pool would not take or finish.
func (a *API) poolError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, crew.ErrClosed):
		a.fail(w, r, http.StatusServiceUnavailable, "shutting down")
	case errors.Is(err, crew.ErrQueueFull):
		w.Header().Set("Retry-After", a.retryAfter())
		a.fail(w, r, http.StatusServiceUnavailable, "queue full, retry later")
	case errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", a.retryAfter())
		// The queue may have had room: the work waited for a worker, every
		// one busy (with jobs too: they share the pool).
		a.fail(w, r, http.StatusServiceUnavailable, fmt.Sprintf("not done within the request timeout (%v): the workers were busy, retry later", a.RequestTimeout))
	case errors.Is(err, context.Canceled):
		a.fail(w, r, 499, "client went away")
	default:
		a.fail(w, r, http.StatusInternalServerError, err.Error())
	}
}

func (a *API) retryAfter() string {
	return strconv.Itoa(int((a.RetryAfter + time.Second - 1) / time.Second))
}

// decode reads one JSON value into v, strictly: unknown fields, trailing
// data and bodies over the limit are refused with a clear answer.
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any, fields bodyFields) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			w.Header().Set("Accept-Post", "application/json")
			sent := quoteShort(ct)
			if err == nil && len(mt) <= 80 {
				sent = strconv.Quote(mt) // the whole type, parameters aside
			}
			hint := ""
			if mt == "application/x-www-form-urlencoded" {
				hint = " (curl -d sends a form unless told otherwise)"
			}
			a.fail(w, r, http.StatusUnsupportedMediaType, fmt.Sprintf(
				"Content-Type %s%s: the body is JSON; send the header \"Content-Type: application/json\"", sent, hint))
			return false
		}
	}
	done := a.readWindow(w)
	ok := a.decodeBody(w, r, v, fields)
	done(ok)
	return ok
}

// readWindow bounds the read of a request's body: within the request
// timeout, and no longer than the stop allows, so that a client that
// stalls mid-body gets 408 and its connection is closed. done(ok) ends the
// window: read whole (ok), the deadline must not outlive the body (the
// server's background read of the connection would cancel the request at
// it); after a failure it stays, so that the server does not wait for the
// rest of the body before closing the connection.
func (a *API) readWindow(w http.ResponseWriter) (done func(ok bool)) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(a.RequestTimeout))
	var (
		mu      sync.Mutex
		reading = true
	)
	stop := context.AfterFunc(a.cutContext(), func() {
		mu.Lock()
		defer mu.Unlock()
		if reading {
			_ = rc.SetReadDeadline(time.Now())
		}
	})
	return func(ok bool) {
		mu.Lock()
		reading = false
		mu.Unlock()
		stop()
		if ok {
			_ = rc.SetReadDeadline(time.Time{})
		}
	}
}

// forms reads a form POST's body for h (the UI) as the API reads a JSON
// one: at most MaxBody bytes, within the read window; a body too large or
// too slow is answered 413 or 408 before h runs.
func (a *API) forms(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, a.MaxBody)
			done := a.readWindow(w)
			err := r.ParseForm()
			done(err == nil)
			var tooBig *http.MaxBytesError
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				w.Header().Set("Connection", "close")
				a.fail(w, r, http.StatusRequestTimeout, fmt.Sprintf("body not received within the request timeout (%v)", a.RequestTimeout))
				return
			case errors.As(err, &tooBig):
				a.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", tooBig.Limit))
				return
			case err != nil:
				a.fail(w, r, http.StatusBadRequest, "malformed form: "+err.Error())
				return
			}
		}
		h.ServeHTTP(w, r)
	}
}

func (a *API) decodeBody(w http.ResponseWriter, r *http.Request, v any, fields bodyFields) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, a.MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Only the end of the body ends it well. Another token, or a
		// syntax error, is trailing data; a read that fails (a body that
		// stalls after the value, or runs over the limit with trailing
		// bytes) is answered as that failure, 408 or 413, as it would be
		// within the value.
		var syntax *json.SyntaxError
		switch _, e := dec.Token(); {
		case e == io.EOF:
		case e == nil || errors.As(e, &syntax):
			err = errors.New("trailing data after the JSON value")
		default:
			err = e
		}
	}
	var (
		tooBig    *http.MaxBytesError
		syntax    *json.SyntaxError
		wrongType *json.UnmarshalTypeError
		refused   *bodyError
	)
	switch {
	case err == nil:
		return true
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		why := fmt.Sprintf("body not received within the request timeout (%v)", a.RequestTimeout)
		if a.cutContext().Err() != nil {
			why = "body not received before the stop"
		}
		a.fail(w, r, http.StatusRequestTimeout, why)
	case errors.As(err, &tooBig):
		a.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", tooBig.Limit))
	case errors.Is(err, io.EOF):
		a.fail(w, r, http.StatusBadRequest, "empty body: want a JSON object")
	case errors.As(err, &syntax):
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("malformed JSON near byte %d: want an object such as %s", syntax.Offset, fields.example))
	case errors.As(err, &refused):
		a.fail(w, r, http.StatusBadRequest, refused.msg)
	case errors.As(err, &wrongType):
		field := wrongType.Field
		want, known := fields.want[field]
		if !known {
			field, want = "the body", "an object such as "+fields.example
		} else {
			field = strconv.Quote(field)
		}
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%s: want %s, got a JSON %s", field, want, wrongType.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%s: want only %s", strings.TrimPrefix(err.Error(), "json: "), fields.names()))
	default:
		a.fail(w, r, http.StatusBadRequest, "malformed JSON: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	return false
}

// bodyFields describes a body for the errors about it: an example, and
// what each field wants.
type bodyFields struct {
	example string
	want    map[string]string
}

func (f bodyFields) names() string {
	names := make([]string, 0, len(f.want))
	for n := range f.want {
		names = append(names, strconv.Quote(n))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

var (
	factorialFields = bodyFields{
		example: `{"numbers":[1,2,3]}`,
		want:    map[string]string{"numbers": fmt.Sprintf("an array of integers from 0 to %d", kinds.MaxFactorial)},
	}
	jobFields = bodyFields{
		example: `{"kind":"sleep","duration":"50ms"}`,
		want: map[string]string{
			"kind":            "a string: sleep or factorial",
			"timeout":         `a duration as a string such as "2s"`,
			"max_attempts":    fmt.Sprintf("an integer from 1 to %d", jobs.MaxMaxAttempts),
			"run_at":          `a time in RFC 3339 such as "2026-11-25T18:00:00Z"`,
			"delay":           `a duration as a string such as "10m"`,
			"queue":           fmt.Sprintf(`a queue's name: 1 to %d letters, digits, '-' or '_' (default "default")`, jobs.MaxQueueName),
			"priority":        fmt.Sprintf("an integer from 1 (first) to %d (last); default %d", jobs.MaxPriority, jobs.DefaultPriority),
			"after":           fmt.Sprintf("an array of up to %d job ids the job waits for", jobs.MaxAfter),
			"even_on_failure": "true or false: run once every job of \"after\" has ended, whatever its end (default: a parent without success cancels the job)",
		},
	}
)

func (a *API) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if code >= 500 && a.Log != nil {
		a.Log.Warn("request failed", "request_id", requestID(r.Context()), "path", r.URL.Path, "status", code, "error", msg)
	}
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
