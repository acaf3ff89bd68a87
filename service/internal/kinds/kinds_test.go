package kinds_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/service/internal/kinds"
)

// TestKinds: crewd's two kinds, through the library as any program's:
// a factorial's result exact, 21! refused naming "n", a sleep that ends
// with its context, and one with no duration refused naming "duration".
func TestKinds(t *testing.T) {
	ks := kinds.New()
	prepare := func(kind, args string) (jobs.Prepared, error) {
		return ks.Prepare(jobs.Spec{Kind: kind, Args: json.RawMessage(args)}, time.Second, time.Minute)
	}
	p, err := prepare("factorial", `{"n":20}`)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Run(context.Background()); err != nil || string(out) != "2432902008176640000" {
		t.Fatalf("20!: %s %v", out, err)
	}
	if _, err := prepare("factorial", `{"n":21}`); err == nil || !strings.Contains(err.Error(), `"n" from 0 to 20`) {
		t.Fatalf("21!: %v", err)
	}
	if _, err := prepare("sleep", `{}`); err == nil || !strings.Contains(err.Error(), `"duration" is required`) {
		t.Fatalf("a sleep without duration: %v", err)
	}
	p, err = prepare("sleep", `{"duration":"1h"}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a sleep whose context ended: %v", err)
	}
	// A sleep failing until a time: it fails before, succeeds after.
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if p, err = prepare("sleep", `{"duration":"1ms","fail_until":"`+until+`"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "failing until "+until) {
		t.Fatalf("a sleep failing for an hour: %v", err)
	}
	if p, err = prepare("sleep", `{"duration":"1ms","fail_until":"2020-01-01T00:00:00Z"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatalf("a sleep failing until a time past: %v", err)
	}
	if _, err := prepare("sleep", `{"duration":"1ms","fail_until":"soon"}`); err == nil || !strings.Contains(err.Error(), "fail_until") {
		t.Fatalf("a bad fail_until: %v", err)
	}
}
