package natsd_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew/jobs/natsd"
	"github.com/nats-io/nats.go/jetstream"
)

// killChild names the data directory of the process that
// TestAckedWritesOutliveASIGKILL starts and kills.
const killChild = "NATSD_KILL_CHILD"

// TestAckedWritesOutliveASIGKILL: a process that runs the embedded server
// and writes to it as jsjobs does (a job's message published to a work
// queue stream, then, once delivered, its record put in a bucket with a
// TTL, then the message acked) is SIGKILLed at a random moment, again and
// again on the same directory; after each kill, every message whose
// publish was acknowledged is still in the stream or has its record, and
// every record whose put was acknowledged is there. NATSD_KILL_CYCLES sets
// the kills (5); every fifth starts on a new directory.
func TestAckedWritesOutliveASIGKILL(t *testing.T) {
	if dir := os.Getenv(killChild); dir != "" {
		killedWriter(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("starts and kills processes")
	}
	cycles := 5
	if n, err := strconv.Atoi(os.Getenv("NATSD_KILL_CYCLES")); err == nil {
		cycles = n
	}
	var dir string
	published, recorded := map[string]bool{}, map[string]bool{}
	publishes, puts := 0, 0
	for cycle := range cycles {
		if cycle%5 == 0 {
			// Five kills on a directory, then a new one: the jobs waiting
			// pile up (the writer publishes faster than it records).
			if dir != "" {
				os.RemoveAll(dir)
			}
			var err error
			if dir, err = os.MkdirTemp(t.TempDir(), "kill"); err != nil {
				t.Fatal(err)
			}
			publishes += len(published)
			clear(published)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestAckedWritesOutliveASIGKILL$", "-test.v")
		cmd.Env = append(os.Environ(), killChild+"="+dir, "CYCLE="+strconv.Itoa(cycle))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Every line is one write(2), whole in the pipe at the kill.
		lines := bufio.NewScanner(out)
		ready := make(chan struct{})
		var mu sync.Mutex
		read := make(chan struct{})
		var other []string // the writer's failure, if it fails
		go func() {
			defer close(read)
			for lines.Scan() {
				what, id, _ := strings.Cut(lines.Text(), " ")
				mu.Lock()
				switch what {
				case "ready":
					close(ready)
				case "published":
					published[id] = true
				case "recorded":
					recorded[id] = true
				default:
					other = append(other, lines.Text())
				}
				mu.Unlock()
			}
		}()
		select {
		case <-ready:
		case <-read:
			cmd.Wait()
			t.Fatalf("the writer ended before it was ready: %s", strings.Join(other, "\n"))
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the writer not ready within 30 s")
		}
		time.Sleep(time.Duration(rand.Int64N(int64(500 * time.Millisecond))))
		cmd.Process.Kill()
		<-read
		cmd.Wait()
		mu.Lock()
		missing := check(t, dir, published, recorded)
		mu.Unlock()
		if len(missing) > 0 {
			t.Fatalf("kill %d: of %d acked publishes and %d acked record puts, lost after the restart: %s",
				cycle+1, len(published), len(recorded), strings.Join(missing, ", "))
		}
		// What is checked is not checked again, but for the jobs still
		// waiting: their record may come in a later cycle.
		publishes += len(published)
		puts += len(recorded)
		for id := range recorded {
			delete(published, id)
		}
		publishes -= len(published)
		clear(recorded)
		if testing.Verbose() && (cycle+1)%50 == 0 {
			t.Logf("%d kills: %d acked publishes, %d acked record puts, none lost", cycle+1, publishes+len(published), puts)
		}
	}
	t.Logf("%d kills: %d acked publishes, %d acked record puts, none lost", cycles, publishes+len(published), puts)
}

// check restarts the server on dir and returns what it lost: a message
// acked without its record, or a record.
func check(t *testing.T, dir string, published, recorded map[string]bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := natsd.Start(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stream, err := js.Stream(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "records")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for id := range published {
		if _, err := kv.Get(ctx, id); err == nil {
			continue
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatal(err)
		}
		if recorded[id] {
			missing = append(missing, "record "+id)
			continue
		}
		if _, err := stream.GetLastMsgForSubject(ctx, "jobs."+id); errors.Is(err, jetstream.ErrMsgNotFound) {
			missing = append(missing, "job "+id)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	return missing
}

// killedWriter is the process killed: it writes until it is.
func killedWriter(t *testing.T, dir string) {
	ctx := context.Background()
	s, err := natsd.Start(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "jobs", Subjects: []string{"jobs.>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, AllowDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "run", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The records' bucket as jsjobs keeps it: TTLs per record, the oldest
	// discarded when full.
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "records", Storage: jetstream.FileStorage}); err == nil {
		ks, _ := js.Stream(ctx, "KV_records")
		sc := ks.CachedInfo().Config
		sc.AllowMsgTTL, sc.Discard = true, jetstream.DiscardOld
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			t.Fatal(err)
		}
	} else if !errors.Is(err, jetstream.ErrBucketExists) {
		t.Fatal(err)
	}
	say := func(what, id string) { os.Stdout.Write([]byte(what + " " + id + "\n")) }
	say("ready", "")
	// Records: each delivered job's record put with a TTL, then the job
	// acked, as jsjobs' Handle does.
	for range 4 {
		go func() {
			for {
				batch, err := cons.Fetch(8, jetstream.FetchMaxWait(time.Second))
				if err != nil {
					continue
				}
				for m := range batch.Messages() {
					id := strings.TrimPrefix(m.Subject(), "jobs.")
					if _, err := js.Publish(ctx, "$KV.records."+id, []byte(`{"state":"succeeded"}`), jetstream.WithMsgTTL(time.Hour)); err != nil {
						continue
					}
					say("recorded", id)
					m.DoubleAck(ctx)
				}
			}
		}()
	}
	cycle := os.Getenv("CYCLE")
	var wg sync.WaitGroup
	for p := range 3 {
		wg.Go(func() {
			for n := 0; ; n++ {
				id := fmt.Sprintf("c%sp%dn%d", cycle, p, n)
				if _, err := js.Publish(ctx, "jobs."+id, []byte("{}"), jetstream.WithMsgID(id)); err == nil {
					say("published", id)
				}
			}
		})
	}
	wg.Wait()
}
