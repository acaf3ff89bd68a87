package jsjobs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
)

// TestSubmitOnceInJetStream: one key makes one job across two runners
// (two replicas) posting at once; the stream holds one message for it,
// and the key itself is nowhere in the bucket, only its hash.
func TestSubmitOnceInJetStream(t *testing.T) {
	c := newCluster(t)
	front, back := c.runner(t, jsConfig()), c.runner(t, jsConfig())
	jobstest.CheckKeyed(t, front, back)
	ctx := context.Background()
	s, err := c.js.Stream(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 { // the keys of CheckKeyed's three jobs
		t.Fatalf("%d messages in the stream for three keys", info.State.Msgs)
	}
	kv, err := c.js.KeyValue(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if strings.Contains(k, "8e03978e") || strings.Contains(k, "another") || strings.Contains(k, "ended") {
			t.Fatalf("a raw key in the bucket: %q", k)
		}
	}

	// A request that claimed its key and died before recording its job:
	// the retry records and publishes the job claimed.
	h := sha256.Sum256([]byte("died"))
	claim, _ := json.Marshal(map[string]any{"id": "00000000000000ee", "request_sha256": fingerprintOf(t, jobstest.Factorial(4)), "created": time.Now()})
	if _, err := kv.Create(ctx, "idempotency."+hex.EncodeToString(h[:]), claim); err != nil {
		t.Fatal(err)
	}
	rec, replayed, err := front.SubmitOnce(ctx, jobstest.Factorial(4), "died")
	if err != nil || rec.ID != "00000000000000ee" || !replayed {
		t.Fatalf("the retry of a request that died: %+v %v %v", rec, replayed, err)
	}
	consume(t, back)
	eventually(t, front, "00000000000000ee", jobs.Succeeded)
}

// fingerprintOf is the request hash SubmitOnce keeps for spec, with the
// default timeout of jsConfig.
func fingerprintOf(t *testing.T, spec jobs.Spec) string {
	spec.Timeout = jobs.Duration(time.Second)
	body, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// TestSubmitOnceReplaysAScheduledJob: a keyed submit of a job due later,
// sent again as its client retries (the same run_at, or the same delay),
// is answered with the same job: not ErrKeyReused once the time came
// within a second or a delay gave another time, nor refused as in the past
// once it passed. Another request under the key is still ErrKeyReused.
func TestSubmitOnceReplaysAScheduledJob(t *testing.T) {
	c := newCluster(t)
	cfg := jsConfig()
	cfg.Kinds = gateKinds()
	r := c.runner(t, cfg)
	ctx := context.Background()
	at := gateSpec(t, GateArgs{Sleep: jobs.Duration(time.Millisecond)}, 10*time.Second)
	at.RunAt = time.Now().Add(1800 * time.Millisecond)
	later := gateSpec(t, GateArgs{Sleep: jobs.Duration(time.Millisecond)}, 10*time.Second)
	later.Delay = jobs.Duration(10 * time.Minute)
	first, replayed, err := r.SubmitOnce(ctx, at, "at")
	if err != nil || replayed || first.State != jobs.Scheduled {
		t.Fatalf("first at: %+v %v %v", first, replayed, err)
	}
	delayed, replayed, err := r.SubmitOnce(ctx, later, "delay")
	if err != nil || replayed || delayed.State != jobs.Scheduled {
		t.Fatalf("first delay: %+v %v %v", delayed, replayed, err)
	}
	time.Sleep(time.Second) // run_at now less than a second ahead
	for key, want := range map[string]string{"at": first.ID, "delay": delayed.ID} {
		spec := at
		if key == "delay" {
			spec = later
		}
		again, replayed, err := r.SubmitOnce(ctx, spec, key)
		if err != nil || !replayed || again.ID != want {
			t.Errorf("the same keyed request (%s) 1 s later: %+v replayed %v, %v; want job %s replayed", key, again, replayed, err, want)
		}
	}
	time.Sleep(2 * time.Second) // run_at passed
	again, replayed, err := r.SubmitOnce(ctx, at, "at")
	if err != nil || !replayed || again.ID != first.ID {
		t.Errorf("the same keyed request 3 s later: %+v replayed %v, %v; want job %s replayed", again, replayed, err, first.ID)
	}
	other := at
	other.Timeout = jobs.Duration(9 * time.Second)
	if _, _, err := r.SubmitOnce(ctx, other, "at"); !errors.Is(err, jobs.ErrKeyReused) {
		t.Errorf("another request under the key, its time passed: %v, want ErrKeyReused", err)
	}
	var invalid *jobs.InvalidError
	if _, _, err := r.SubmitOnce(ctx, at, "new"); !errors.As(err, &invalid) || !errors.Is(err, jobs.ErrRunAtPast) {
		t.Errorf("a new key with a run_at past: %v, want an InvalidError", err)
	}
}
