package natsotel_test

import (
	"context"

	"github.com/crew-go/crew/natsjs"
	"github.com/crew-go/crew/natsjs/natsotel"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The producer publishes inside its request's span; the consumer's runs
// are children of it, on whichever process pulls the message.
func ExampleHandler() {
	var (
		ctx    = context.Background()
		js     jetstream.JetStream // jetstream.New(nc)
		handle natsjs.Handler      // the job
	)
	if js != nil {
		_, _ = natsotel.Publish(ctx, js, &nats.Msg{Subject: "jobs.42", Data: []byte(`{"kind":"sleep"}`)})
	}
	traced := natsotel.Handler(handle) // pass to natsjs.New
	_ = traced
	// Output:
}
