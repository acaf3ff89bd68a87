package jsjobs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/internal/jobstest"
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
	if info.State.Msgs != 2 {
		t.Fatalf("%d messages in the stream for two keys", info.State.Msgs)
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
		if strings.Contains(k, "8e03978e") || strings.Contains(k, "another") {
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
