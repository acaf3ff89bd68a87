package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/crew-go/crew/natsjs"
)

func maybeWorker() bool { return false }

func TestSourceRunsEveryMessage(t *testing.T) {
	e := newEnv(t)
	e.stream(t, "jobs", "jobs.>")
	cons := e.consumer(t, "jobs", "crewd", 5*time.Second, 5)
	const n = 2000
	e.publish(t, "jobs.a", n)
	pool := newPool(t, 4)
	got := newSeen()
	src, err := natsjs.New(pool, cons, func(ctx context.Context, m *natsjs.Msg) error {
		got.add(m.StreamSeq())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background()) }()
	eventually(t, 20*time.Second, "every message acked", func() bool { return src.Stats().Acked == n })
	if err := src.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got.distinct() != n {
		t.Fatalf("distinct %d, want %d", got.distinct(), n)
	}
	t.Log(src.Stats())
}
