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

// A store of three partitions (on a cluster, their leaders on different
// servers): submits go to them in turn, one Source runs them all, and a
// job is read through the partition its id names.
func ExampleNewPartitioned() {
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
	store, err := jsjobs.NewPartitioned(ctx, js, jsjobs.Config{Kinds: &kinds}, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	pool, _ := crew.New()
	source, _ := store.Source(pool)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- source.Run(runCtx) }()

	for _, text := range []string{"one", "two", "three"} {
		spec, _ := jobs.NewSpec(Shout{Text: text})
		rec, err := store.Submit(ctx, spec)
		if err != nil {
			log.Fatal(err)
		}
		rec, _ = store.Wait(ctx, rec.ID)
		out, _ := jobs.ResultOf[string](rec)
		fmt.Println("partition", rec.ID[:2], rec.State, out)
	}
	stop()
	<-ran
	_ = pool.Shutdown(ctx, crew.Drain)
	// Output:
	// partition 01 succeeded ONE!
	// partition 02 succeeded TWO!
	// partition 00 succeeded THREE!
}
