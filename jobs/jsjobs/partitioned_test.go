package jsjobs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/jsjobs"
	"github.com/crew-go/crew/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPartitionedRunsEveryJobOnce: a store of three partitions takes 300
// jobs in turns (about a hundred each, each id naming its partition), runs
// each once on one Source over them all, lists them page by page newest
// first, every job once, counts them, and reads, cancels and retries each
// through its partition; a job of the store from before partitions (on
// partition 0's names, its id beginning as partition 1's) is still found,
// canceled and retried there.
func TestPartitionedRunsEveryJobOnce(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	// The store before partitions: a Runner on the same names.
	old := c.runner(t, jsConfig())
	old.InPartition(1)
	legacy := submit(t, old, jobstest.Sleep(time.Minute))
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	p := c.partitioned(t, jsConfig(), 3)
	perPartition := map[int]int{}
	ids := map[string]bool{}
	for range 300 {
		rec := submit(t, p, jobstest.Factorial(5))
		perPartition[jsjobs.PartitionOf(rec.ID)]++
		ids[rec.ID] = true
	}
	for k := range 3 {
		if perPartition[k] != 100 {
			t.Errorf("partition %d took %d of 300 jobs, want 100 (in turns)", k, perPartition[k])
		}
	}
	if rec, err := p.Get(ctx, legacy.ID); err != nil || rec.State != jobs.Queued {
		t.Fatalf("the job from before partitions: %+v, %v", rec, err)
	}
	if _, _, err := p.Cancel(ctx, legacy.ID); err != nil {
		t.Fatalf("cancel of the job from before partitions: %v", err)
	}

	serveOn(t, 4, func(pool *crew.Pool) (*natsjs.Source, error) { return p.Source(pool) }) // over every partition
	for id := range ids {
		eventually(t, p, id, jobs.Succeeded)
	}
	counts, err := p.Counts(ctx)
	if err != nil || counts[jobs.Succeeded] != 300 || counts[jobs.Canceled] != 1 {
		t.Fatalf("counts %v (%v), want 300 succeeded and 1 canceled", counts, err)
	}
	listed := map[string]bool{}
	var last time.Time
	q := jobs.Query{State: jobs.Succeeded, Limit: 70}
	for pages := 0; ; pages++ {
		page, err := p.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range page.Jobs {
			if listed[rec.ID] || !ids[rec.ID] {
				t.Fatalf("page %d lists %s again, or a job not submitted", pages, rec.ID)
			}
			listed[rec.ID] = true
			if !last.IsZero() && rec.Finished.After(last.Add(time.Second)) {
				t.Errorf("page %d: %s ended %v, after the one before it (%v): not newest first", pages, rec.ID, rec.Finished, last)
			}
			last = rec.Finished
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if len(listed) != 300 {
		t.Fatalf("the pages list %d jobs, want 300", len(listed))
	}
	if rec, err := p.Retry(ctx, legacy.ID); err != nil || rec.State != jobs.Queued || rec.Retries != 1 {
		t.Fatalf("retry of the job from before partitions: %+v, %v", rec, err)
	}
	if _, err := p.Get(ctx, "ff00000000000000"); err != jobs.ErrNotFound {
		t.Fatalf("an unknown id: %v, want ErrNotFound", err)
	}
}

// TestPartitionedSubmitSurvivesALeaderCut: three nats-server processes, a
// store of three partitions with three replicas each, partition 1's stream
// led by n2, the others' elsewhere, and beside it a store of one partition
// led by n2 too. n2 is frozen (SIGSTOP: cut off, nothing handed over)
// while a client submits job after job to each: the partitioned store
// answers every submit within about Failover (partition 1 left for the
// next, then skipped), while the single one waits for its election; every
// job accepted runs once its partition has a leader again.
func TestPartitionedSubmitSurvivesALeaderCut(t *testing.T) {
	c := startProcessCluster(t)
	nc, js, p := partitionedR3(t, c.urls[0]) // n1, which stays up
	ctx := context.Background()
	cfg := jsConfig()
	cfg.Replicas = 3
	single := cfg
	single.Stream, single.Bucket = "single", "single"
	one, err := jsjobs.New(ctx, js, single)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = one.Close() })
	// Partition 1's stream and the single store's on n2, partitions 0's
	// and 2's on n1 and n3.
	want := map[string]string{"jobs": "n1", "jobs-1": "n2", "jobs-2": "n3", "single": "n2"}
	leaders := func() map[string]string {
		out := map[string]string{}
		for _, r := range append(p.Partitions(), one) {
			if g, err := r.StoreGroups(ctx); err == nil && len(g) > 0 {
				out[g[0].Name] = g[0].Leader
			}
		}
		return out
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		got := leaders()
		moved := 0
		for stream, server := range want {
			if got[stream] != server {
				moved++
				_, _ = nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, []byte(`{"placement":{"preferred":"`+server+`"}}`), 2*time.Second)
			}
		}
		if moved == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream leaders %v, want %v", got, want)
		}
	}

	// The single store, submitted to beside: its slowest submit.
	var singleSlowest time.Duration
	var singleErrs int
	singleDone := make(chan struct{})
	cut := make(chan struct{})
	go func() {
		defer close(singleDone)
		<-cut
		for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
			began := time.Now()
			if _, err := one.Submit(ctx, jobstest.Factorial(3)); err != nil {
				singleErrs++
			}
			singleSlowest = max(singleSlowest, time.Since(began))
		}
	}()
	// Reads beside: the jobs submitted before the cut, in every
	// partition, read over and over (the record, the message, how far
	// the consumer delivered: replicas picked at random, n2's among them).
	var readTimes []time.Duration
	var reads, readErrs int
	readDone := make(chan struct{})
	var ids []string
	var slowest time.Duration
	frozen := false
	began := time.Now()
	for i := 0; !frozen || time.Since(began) < 8*time.Second; i++ {
		if i == 30 {
			c.freeze(t, 1) // n2
			frozen, began = true, time.Now()
			close(cut)
			known := slices.Clone(ids)
			go func() {
				defer close(readDone)
				for end := time.Now().Add(8 * time.Second); time.Now().Before(end); reads++ {
					t0 := time.Now()
					if _, err := p.Get(ctx, known[reads%len(known)]); err != nil {
						readErrs++
					}
					readTimes = append(readTimes, time.Since(t0))
				}
			}()
		}
		t0 := time.Now()
		rec, err := p.Submit(ctx, jobstest.Factorial(3))
		took := time.Since(t0)
		if err != nil {
			t.Fatalf("submit %d (n2 frozen: %v): %v after %v", i, frozen, err, took)
		}
		if frozen {
			slowest = max(slowest, took)
		}
		ids = append(ids, rec.ID)
	}
	<-singleDone
	<-readDone
	slices.Sort(readTimes)
	slowestRead, p99 := readTimes[len(readTimes)-1], readTimes[len(readTimes)*99/100]
	t.Logf("n2 frozen 8 s: %d submits to 3 partitions, the slowest %v; to 1 partition the slowest %v (%d failed); %d reads, 99%% within %v, the slowest %v (%d failed)",
		len(ids)-30, slowest.Round(time.Millisecond), singleSlowest.Round(time.Millisecond), singleErrs, reads, p99.Round(time.Millisecond), slowestRead.Round(time.Millisecond), readErrs)
	// Reads: the goal is 1 s, which the compose cluster test holds on a
	// network cut. Here a server is frozen (SIGSTOP: its connections stay
	// open, the worst for routing) under a flood of submits, and the
	// servers left may answer every try of a read late at once, for about
	// a second: the bound on the slowest is 1.5 s, and 99 reads in 100 must
	// take at most 500 ms.
	if slowestRead > 1500*time.Millisecond || p99 > 500*time.Millisecond || readErrs > 0 {
		t.Errorf("with n2 frozen the slowest read took %v, 99%% within %v, and %d failed; want at most 1.5 s, 500 ms, and none", slowestRead, p99, readErrs)
	}
	if slowest > p.Failover+time.Second {
		t.Errorf("a submit took %v with n2 frozen, want about Failover (%v) at most", slowest, p.Failover)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p.Collector()); err != nil {
		t.Fatal(err)
	}
	left := func(k int) float64 {
		return gathered(t, reg)[fmt.Sprintf(`crew_job_partition_submits_total{outcome="left",partition="%d"}`, k)]
	}
	if left(1) < 1 || left(0)+left(2) != 0 {
		t.Errorf("submits left for another partition: %v, %v, %v; want partition 1's (frozen), no other's", left(0), left(1), left(2))
	}
	if singleSlowest < 2*time.Second && singleErrs == 0 {
		t.Errorf("the single store's slowest submit took %v with its leader frozen: the cut did not cut", singleSlowest)
	}
	serveOn(t, 4, func(pool *crew.Pool) (*natsjs.Source, error) { return p.Source(pool) })
	for _, id := range ids {
		if rec := eventually(t, p, id, jobs.Succeeded); rec.Attempts != 1 {
			t.Errorf("job %s ran %d times", id, rec.Attempts)
		}
	}
	c.thaw(t, 1)
}

// partitioned makes a store of n partitions with cfg on the cluster,
// closed when the test ends.
func (c *cluster) partitioned(t *testing.T, cfg jsjobs.Config, n int) *jsjobs.Partitioned {
	t.Helper()
	p, err := jsjobs.NewPartitioned(context.Background(), c.js, cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// serveOn runs the Source newSource makes on a pool of workers until the
// test ends.
func serveOn(t *testing.T, workers int, newSource func(*crew.Pool) (*natsjs.Source, error)) *natsjs.Source {
	t.Helper()
	pool, err := crew.New(crew.WithWorkers(workers))
	if err != nil {
		t.Fatal(err)
	}
	src, err := newSource(pool)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = src.Shutdown(ctx)
		_ = pool.Shutdown(ctx, crew.Hard)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return src
}

// TestPartitionedQueuesAndTheRest: a named queue over three partitions,
// its limit and rate shared out and read back whole, paused and resumed
// on every partition (its jobs, spread over them, wait, then run); a
// periodic job ticks from partition 0; the process serving them is one
// replica with the jobs it runs in every partition; the store's metrics
// register and say it is up.
func TestPartitionedQueuesAndTheRest(t *testing.T) {
	jsjobs.AnnounceEvery(t, 100*time.Millisecond)
	c := newCluster(t)
	ctx := context.Background()
	var h holding
	cfg := jsConfig()
	cfg.Kinds, cfg.Replica = h.kinds(), "worker-1"
	p := c.partitioned(t, cfg, 3)
	if err := p.SetQueue(ctx, jobs.Queue{Name: "email", Limit: 6, Rate: 30}); err != nil {
		t.Fatal(err)
	}
	queue := func() jobs.QueueInfo {
		t.Helper()
		qs, err := p.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Name == "email" {
				return q
			}
		}
		t.Fatalf("no queue email in %+v", qs)
		return jobs.QueueInfo{}
	}
	if q := queue(); q.Limit != 6 || q.Rate != 30 || time.Duration(q.Per) != time.Second {
		t.Fatalf("the queue reads %+v, want limit 6 and 30 a second", q)
	}
	if err := p.PauseQueue(ctx, "email", time.Time{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 9 {
		ids = append(ids, submit(t, p, hold(700*time.Millisecond, "email")).ID)
	}
	serveOn(t, 8, func(pool *crew.Pool) (*natsjs.Source, error) { return p.QueueSource(ctx, "email", pool) })
	time.Sleep(time.Second)
	if n := h.ran.Load(); n != 0 {
		t.Fatalf("%d jobs of a paused queue ran", n)
	}
	if q := queue(); !q.Paused || q.Waiting != 9 || q.OldestWaiting.IsZero() {
		t.Fatalf("the paused queue reads %+v, want 9 waiting", q)
	}
	if err := p.ResumeQueue(ctx, "email"); err != nil {
		t.Fatal(err)
	}
	// Resumed: at most six at a time (two a partition), the one replica
	// naming the jobs it runs in every partition.
	var reps []jobs.Replica
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if reps, err = p.Replicas(ctx); err != nil {
			t.Fatal(err)
		}
		parts := map[int]bool{}
		if len(reps) == 1 {
			for _, j := range reps[0].Jobs {
				parts[jsjobs.PartitionOf(j.ID)] = true
			}
		}
		if len(parts) == 3 && reps[0].Running == len(reps[0].Jobs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas %+v, want worker-1 running jobs of the three partitions", reps)
		}
	}
	if reps[0].Name != "worker-1" {
		t.Errorf("replica %+v", reps[0])
	}
	for _, id := range ids {
		eventually(t, p, id, jobs.Succeeded)
	}
	if most := h.most.Load(); most > 6 {
		t.Errorf("%d ran at once, over the queue's limit of 6", most)
	}

	if _, err := p.SetPeriodic(ctx, jobs.Periodic{Name: "tick", Every: "@every 1s", Spec: jobstest.Factorial(2)}); err != nil {
		t.Fatal(err)
	}
	serveOn(t, 2, func(pool *crew.Pool) (*natsjs.Source, error) { return p.Source(pool) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ps, err := p.Periodics(ctx)
		if err == nil && len(ps) == 1 && len(ps[0].Recent) > 0 {
			if rec, err := p.Get(ctx, ps[0].Recent[0]); err == nil && jsjobs.PartitionOf(rec.ID) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the periodic job after 10 s: %+v, %v", ps, err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p.Collector()); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader("# HELP crew_job_store_up 1 while the job store (the jobs' stream and the records' bucket) answers this process, 0 during an outage.\n# TYPE crew_job_store_up gauge\ncrew_job_store_up 1\n"), "crew_job_store_up"); err != nil {
		t.Error(err)
	}
	g := gathered(t, reg)
	if reads, tries := g["crew_job_store_reads_total"], g["crew_job_store_read_tries_total"]; reads < 1 || tries < reads {
		t.Errorf("%v reads in %v tries; want some, each at least one try", reads, tries)
	}
	for k := range 3 {
		up := g[fmt.Sprintf(`crew_job_partition_up{partition="%d"}`, k)]
		stored := g[fmt.Sprintf(`crew_job_partition_submits_total{outcome="stored",partition="%d"}`, k)]
		left := g[fmt.Sprintf(`crew_job_partition_submits_total{outcome="left",partition="%d"}`, k)]
		if up != 1 || stored < 1 || left != 0 {
			t.Errorf("partition %d: up %v, %v submits stored, %v left; want up, some stored, none left", k, up, stored, left)
		}
	}
	if down, err := p.StoreDown(); err != nil || !down.IsZero() {
		t.Errorf("StoreDown: %v, %v", down, err)
	}
}

// TestPartitionedLeadersSpread: the six groups of a store of three
// partitions on three servers, every leader moved to n1 first, are spread
// two a server by Balance's rounds, and their 36 lanes (the default
// queue's and two named queues' four priorities, in each partition) 12 a
// server likewise, each lane's three (one a partition) one a server; a
// round then asks for nothing.
func TestPartitionedLeadersSpread(t *testing.T) {
	s := newThreeServers(t)
	for i := range 3 {
		s.start(i)
	}
	nc, _, p := partitionedR3(t, s.urls[0])
	ctx := context.Background()
	for _, q := range []string{"mail", "reports"} { // 12 lanes a partition, as compose's: a multiple of the servers
		if err := p.SetQueue(ctx, jobs.Queue{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	leaders := func() map[string]int {
		g, err := p.StoreGroups(ctx)
		if err != nil {
			return nil
		}
		n := map[string]int{}
		for _, gr := range g {
			n[gr.Leader]++
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); leaders()["n1"] != 6 || p.LaneLeaders(ctx)["n1"] != 36; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("leaders %v and the lanes' %v, want all on n1 to begin with", leaders(), p.LaneLeaders(ctx))
		}
		g, _ := p.StoreGroups(ctx)
		for _, gr := range g {
			if gr.Leader != "n1" {
				_, _ = nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+gr.Name, []byte(`{"placement":{"preferred":"n1"}}`), 2*time.Second)
			}
		}
		for _, subj := range p.LaneStepDowns(ctx, "n1") {
			_, _ = nc.Request(subj, []byte(`{"placement":{"preferred":"n1"}}`), 2*time.Second)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		p.BalanceOnce(ctx)
		lanes, unspread := p.LaneLeaders(ctx), p.LaneSpread(ctx)
		if n := leaders(); n["n1"] == 2 && n["n2"] == 2 && n["n3"] == 2 && lanes["n1"] == 12 && lanes["n2"] == 12 && lanes["n3"] == 12 && len(unspread) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaders %v and the lanes' %v after 30 s of rounds (lanes whose partitions share a leader: %v), want two of each a server, one lane's one a server", leaders(), lanes, unspread)
		}
	}
	time.Sleep(time.Second) // the followers current again
	if asked := p.BalanceOnce(ctx); asked != 0 {
		t.Errorf("a round over spread leaders asked %d moves", asked)
	}
}

// partitionedR3 connects to the cluster server at url and makes a store of
// three partitions of three replicas there, trying again while the
// cluster forms; both end with the test.
func partitionedR3(t *testing.T, url string) (*nats.Conn, jetstream.JetStream, *jsjobs.Partitioned) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := jsConfig()
	cfg.Replicas = 3
	var p *jsjobs.Partitioned
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if p, err = jsjobs.NewPartitioned(context.Background(), js, cfg, 3); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = p.Close() })
	return nc, js, p
}

// TestPartitionedSubmitsWhileItsBucketsAreOut: every partition marked out
// by its probes (their buckets' leaders cut off, say), a Runner's own
// Submit refuses at once, but the Partitioned's tries each stream, which a
// submit alone writes, and is accepted.
func TestPartitionedSubmitsWhileItsBucketsAreOut(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	p := c.partitioned(t, jsConfig(), 3)
	for _, r := range p.Partitions() {
		for range 2 {
			r.HandleProbe(fmt.Errorf("%w: records: the bucket's leader cut off", jobs.ErrUnavailable))
		}
		if _, err := r.Submit(ctx, jobstest.Factorial(3)); !errors.Is(err, jobs.ErrUnavailable) {
			t.Fatalf("a partition marked out took a submit of its own: %v", err)
		}
	}
	if _, err := p.StoreDown(); err == nil {
		t.Fatal("every partition marked out, and the store not down")
	}
	for range 6 {
		if _, err := p.Submit(ctx, jobstest.Factorial(3)); err != nil {
			t.Fatalf("a submit to the partitioned store: %v", err)
		}
	}
}
