package jsjobs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/jobs/natsd"
	"github.com/nats-io/nats.go/jetstream"
)

// Thumbnail is a kind of job: the submitter declares it, the workers
// register it.
type Thumbnail struct {
	URL   string `json:"url"`
	Width int    `json:"width"`
}

func (Thumbnail) Kind() string { return "thumbnail" }

func (t Thumbnail) Validate() error {
	if t.Width < 1 {
		return errors.New(`"width": want 1 or more`)
	}
	return nil
}

// A program that only submits declares its kinds by their argument types,
// without the code that runs them: its jobs are checked at Submit as a
// registered kind's are, and run by the workers that register the kind.
func Example_submitOnly() {
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
	ctx := context.Background()

	// The submitter: its kinds declared, no Source, no pool.
	var declared jobs.Kinds
	if err := jobs.Declare[Thumbnail](&declared); err != nil {
		log.Fatal(err)
	}
	submitter, err := jsjobs.New(ctx, js, jsjobs.Config{Kinds: &declared})
	if err != nil {
		log.Fatal(err)
	}
	defer submitter.Close()
	_, err = submitter.Submit(ctx, jobs.Spec{Kind: "thumbnail", Args: []byte(`{"url":"a.png","width":0}`)})
	fmt.Println(err)
	spec, _ := jobs.NewSpec(Thumbnail{URL: "a.png", Width: 64})
	rec, err := submitter.Submit(ctx, spec)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.State)

	// A worker, in another program: the kind registered with its function.
	var registered jobs.Kinds
	_ = jobs.Register(&registered, func(_ context.Context, t Thumbnail) (string, error) {
		return fmt.Sprintf("%s at %d px", t.URL, t.Width), nil
	})
	worker, err := jsjobs.New(ctx, js, jsjobs.Config{Kinds: &registered})
	if err != nil {
		log.Fatal(err)
	}
	defer worker.Close()
	pool, _ := crew.New()
	source, _ := worker.Source(pool)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- source.Run(runCtx) }()

	rec, err = submitter.Wait(ctx, rec.ID)
	if err != nil {
		log.Fatal(err)
	}
	out, _ := jobs.ResultOf[string](rec)
	fmt.Println(rec.State, out)

	stop()
	<-ran
	_ = pool.Shutdown(ctx, crew.Drain)
	// Output:
	// invalid job: thumbnail job: "width": want 1 or more
	// queued
	// succeeded a.png at 64 px
}
