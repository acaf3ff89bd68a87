package jsjobs_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

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

// A periodic job: each replica sets it at its start (the second finds it
// as it is), and the NATS server ticks it once across them all; each tick
// is a job of its own, listed by its kind.
func ExampleRunner_SetPeriodic() {
	dir, _ := os.MkdirTemp("", "jobs")
	defer os.RemoveAll(dir)
	srv, err := natsd.Start(dir, "", nil)
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

	spec, _ := jobs.NewSpec(Shout{Text: "tick"})
	every := jobs.Periodic{Name: "tick", Every: "@every 1s", Spec: spec} // or "0 30 2 * * *", TimeZone: "Europe/Berlin"
	changed, err := runner.SetPeriodic(ctx, every)
	fmt.Println("set:", changed, err)
	changed, err = runner.SetPeriodic(ctx, every) // another replica's start
	fmt.Println("set again:", changed, err)

	pool, _ := crew.New()
	source, _ := runner.Source(pool)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- source.Run(runCtx) }()

	var page jobs.Page
	for len(page.Jobs) == 0 || page.Jobs[0].State != jobs.Succeeded {
		time.Sleep(50 * time.Millisecond)
		page, _ = runner.List(ctx, jobs.Query{Kind: "shout"})
	}
	out, _ := jobs.ResultOf[string](page.Jobs[0])
	fmt.Println(page.Jobs[0].State, out)
	fmt.Println("delete:", runner.DeletePeriodic(ctx, "tick"))

	stop()
	<-ran
	_ = pool.Shutdown(ctx, crew.Drain)
	// Output:
	// set: true <nil>
	// set again: false <nil>
	// succeeded TICK!
	// delete: <nil>
}

// Queues: a job names its queue, a process serves each queue it chooses on
// a pool of its own (its bound there), and a queue may be bounded across
// every process and paused for all of them.
func ExampleRunner_QueueSource() {
	dir, _ := os.MkdirTemp("", "jobs")
	defer os.RemoveAll(dir)
	srv, err := natsd.Start(dir, "", nil)
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
	// At most 2 of the queue's jobs at once across every process.
	fmt.Println("set:", runner.SetQueue(ctx, jobs.Queue{Name: "email", Limit: 2}))

	pool, _ := crew.New(crew.WithWorkers(4)) // this process's bound for the queue
	source, err := runner.QueueSource(ctx, "email", pool)
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- source.Run(runCtx) }()

	spec, _ := jobs.NewSpec(Shout{Text: "welcome"})
	spec.Queue = "email"
	rec, _ := runner.Submit(ctx, spec)
	rec, _ = runner.Wait(ctx, rec.ID)
	out, _ := jobs.ResultOf[string](rec)
	fmt.Println(rec.State, rec.Queue, out)
	queues, _ := runner.Queues(ctx)
	for _, q := range queues {
		fmt.Println(q.Name, q.Limit, q.Paused)
	}

	stop()
	<-ran
	_ = pool.Shutdown(ctx, crew.Drain)
	// Output:
	// set: <nil>
	// succeeded email WELCOME!
	// default 0 false
	// email 2 false
}
