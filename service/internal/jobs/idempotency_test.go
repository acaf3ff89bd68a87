package jobs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/service/internal/jobs"
)

// submitOnceRace posts spec under key n times at once, spread over the
// runners, and returns the ids answered and how many were not replays.
func submitOnceRace(t *testing.T, runners []jobs.KeyedRunner, key string, spec jobs.Spec, n int) (map[string]int, int) {
	t.Helper()
	var (
		mu    sync.Mutex
		ids   = map[string]int{}
		first int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			rec, replayed, err := runners[i%len(runners)].SubmitOnce(context.Background(), spec, key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[rec.ID]++
			if !replayed {
				first++
			}
		})
	}
	wg.Wait()
	return ids, first
}

func checkKeyed(t *testing.T, runners ...jobs.KeyedRunner) {
	t.Helper()
	r := runners[0]
	ids, first := submitOnceRace(t, runners, "8e03978e-40d5-43e8-bc93-6894a57f9324", factorial(10), 16)
	if len(ids) != 1 || first != 1 {
		t.Fatalf("16 posts under one key: ids %v, %d not replays; want one job", ids, first)
	}
	var id string
	for id = range ids {
	}
	// The same request spelled otherwise (the default timeout given) is
	// the same request; another is refused.
	rec, replayed, err := r.SubmitOnce(context.Background(), jobs.Spec{Kind: "factorial", N: factorial(10).N, Timeout: jobs.Duration(time.Second)}, "8e03978e-40d5-43e8-bc93-6894a57f9324")
	if err != nil || rec.ID != id || !replayed {
		t.Fatalf("the same request again: %+v %v %v", rec, replayed, err)
	}
	if _, _, err := r.SubmitOnce(context.Background(), factorial(11), "8e03978e-40d5-43e8-bc93-6894a57f9324"); !errors.Is(err, jobs.ErrKeyReused) || !strings.Contains(err.Error(), id) {
		t.Fatalf("another request under the key: %v", err)
	}
	// Another key, another job.
	other, replayed, err := r.SubmitOnce(context.Background(), factorial(10), "another")
	if err != nil || other.ID == id || replayed {
		t.Fatalf("another key: %+v %v %v", other, replayed, err)
	}
	for _, key := range []string{"", strings.Repeat("k", 256), "tab\there", "é"} {
		var invalid *jobs.InvalidError
		if _, _, err := r.SubmitOnce(context.Background(), factorial(1), key); !errors.As(err, &invalid) {
			t.Fatalf("key %.20q: %v", key, err)
		}
	}
}

func TestSubmitOnceInMemory(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := &jobs.PoolRunner{Pool: pool, Store: jobs.NewStore(100, time.Hour, nil, nil), DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	checkKeyed(t, r)
}

// TestSubmitOnceInJetStream: one key makes one job across two runners
// (two replicas) posting at once; the stream holds one message for it,
// and the key itself is nowhere in the bucket, only its hash.
func TestSubmitOnceInJetStream(t *testing.T) {
	c := newCluster(t)
	front, back := c.runner(t, jsConfig()), c.runner(t, jsConfig())
	checkKeyed(t, front, back)
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
	claim, _ := json.Marshal(map[string]any{"id": "00000000000000ee", "request_sha256": fingerprintOf(t, factorial(4)), "created": time.Now()})
	if _, err := kv.Create(ctx, "idempotency."+hex.EncodeToString(h[:]), claim); err != nil {
		t.Fatal(err)
	}
	rec, replayed, err := front.SubmitOnce(ctx, factorial(4), "died")
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
