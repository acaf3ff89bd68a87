package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// settings are the command's flags.
type settings struct {
	servers  string
	streams  []string
	replicas int
	wait     time.Duration
}

// parse reads the flags; the error says which is wrong.
func parse(args []string, usage io.Writer) (settings, error) {
	var s settings
	var streams string
	fs := flag.NewFlagSet("natsreplicas", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&s.servers, "servers", nats.DefaultURL, "NATS servers, comma-separated")
	fs.StringVar(&streams, "streams", "", "the streams to raise, comma-separated (a key-value bucket B is the stream KV_B)")
	fs.IntVar(&s.replicas, "replicas", 3, "replicas wanted, 1 to 5")
	fs.DurationVar(&s.wait, "wait", 2*time.Minute, "how long to wait for the streams to appear and their replicas to be current")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	switch {
	case fs.NArg() > 0:
		return s, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case streams == "":
		return s, errors.New("-streams: none given")
	case s.replicas < 1 || s.replicas > 5:
		return s, fmt.Errorf("-replicas %d: want 1 to 5", s.replicas)
	case s.wait <= 0:
		return s, fmt.Errorf("-wait %v: want more than 0", s.wait)
	}
	for _, name := range strings.Split(streams, ",") {
		if name = strings.TrimSpace(name); name == "" || strings.ContainsAny(name, " .*>") {
			return s, fmt.Errorf("-streams %q: %q is not a stream name", streams, name)
		}
		s.streams = append(s.streams, name)
	}
	return s, nil
}

// run is the command, with its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	s, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "natsreplicas:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.wait)
	defer cancel()
	nc, err := nats.Connect(s.servers, nats.Name("natsreplicas"), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
	if err != nil {
		fmt.Fprintln(stderr, "natsreplicas:", err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(stderr, "natsreplicas:", err)
		return 1
	}
	for _, name := range s.streams {
		if err := raise(ctx, js, name, s.replicas, stdout); err != nil {
			fmt.Fprintf(stderr, "natsreplicas: stream %s: %v\n", name, err)
			return 1
		}
	}
	return 0
}

// raise waits for the stream, sets its replicas to want unless it has
// as many or more, and waits until every replica is current.
func raise(ctx context.Context, js jetstream.JetStream, name string, want int, stdout io.Writer) error {
	why := "not reached yet"
	for {
		done, w, err := step(ctx, js, name, want, stdout)
		if done {
			return nil
		}
		if err != nil {
			w = err.Error()
		}
		why = w
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done within -wait: %s", why)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// step is one look at the stream: done, or why not yet.
func step(ctx context.Context, js jetstream.JetStream, name string, want int, stdout io.Writer) (bool, string, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := js.Stream(rctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, "it does not exist yet", nil
	}
	if err != nil {
		return false, "", err
	}
	info := st.CachedInfo()
	if have := info.Config.Replicas; have < want {
		cfg := info.Config
		cfg.Replicas = want
		if _, err := js.UpdateStream(rctx, cfg); err != nil {
			return false, "", fmt.Errorf("replicas %d to %d: %w", have, want, err)
		}
		fmt.Fprintf(stdout, "stream %s: replicas %d -> %d\n", name, have, want)
		return false, "just raised", nil
	}
	c := info.Cluster
	if c == nil || c.Leader == "" {
		return false, "no leader", nil
	}
	current := 1 // the leader
	for _, p := range c.Replicas {
		if p.Current && !p.Offline {
			current++
		}
	}
	if current < info.Config.Replicas {
		return false, fmt.Sprintf("%d of %d replicas current", current, info.Config.Replicas), nil
	}
	fmt.Fprintf(stdout, "stream %s: %d replicas, all current, leader %s\n", name, info.Config.Replicas, c.Leader)
	return true, "", nil
}
