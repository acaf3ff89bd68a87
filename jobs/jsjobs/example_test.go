package jsjobs_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/natsd"
	"github.com/nats-io/nats.go/jetstream"
)

// Shout is a kind of job: its arguments, and the name that registers it.
type Shout struct {
	Text string `json:"text"`
}

func (Shout) Kind() string { return "shout" }

// A program that registers a kind, runs its jobs on a pool through an
// embedded NATS server, submits one and reads its typed result.
func Example() {
	dir, _ := os.MkdirTemp("", "jobs")
	defer os.RemoveAll(dir)
	srv, err := natsd.Start(dir, "", nil) // or nats.Connect to a cluster
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

	var kinds jobs.Kinds
	_ = jobs.Register(&kinds, func(ctx context.Context, s Shout) (string, error) {
		return strings.ToUpper(s.Text) + "!", nil
	})
	ctx := context.Background()
	runner, err := jsjobs.New(ctx, js, jsjobs.Config{Kinds: &kinds})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()

	// The worker side: any number of processes sharing the stream.
	pool, _ := crew.New()
	source, _ := runner.Source(pool)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- source.Run(runCtx) }()

	// The client side.
	spec, _ := jobs.NewSpec(Shout{Text: "hello"})
	rec, err := runner.Submit(ctx, spec)
	if err != nil {
		log.Fatal(err)
	}
	rec, err = runner.Wait(ctx, rec.ID)
	if err != nil {
		log.Fatal(err)
	}
	out, _ := jobs.ResultOf[string](rec)
	fmt.Println(rec.State, out)

	stop()
	<-ran
	_ = pool.Shutdown(ctx, crew.Drain)
	// Output: succeeded HELLO!
}
