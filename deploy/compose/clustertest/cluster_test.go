package clustertest

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The cluster's parts, as the compose file names them.
var (
	crewds       = []string{"crewd1", "crewd2", "crewd3"}
	natses       = []string{"nats1", "nats2", "nats3"}
	stream       = "jobs"
	durable      = "crewd"
	bucketStream = "KV_jobs" // the job records' bucket
)

// settings are the test's knobs, from the environment (the load runs
// until the faults are done): CLUSTER_RATE (jobs/s, 50), CLUSTER_SETTLE (how long
// after the last submission every job must have succeeded, 2m), and
// CLUSTER_CREWD_IMAGE (run this crewd image as it is instead of building
// one from the tree: how the test is shown to fail on a broken crewd).
type settings struct {
	rate       int
	settle     time.Duration
	crewdImage string // "" = build crewd:clustertest
}

func readSettings(t *testing.T) settings {
	s := settings{rate: 50, settle: 2 * time.Minute}
	num := func(name string, p *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 10 {
				t.Fatalf("%s=%q: want a number of at least 10", name, v)
			}
			*p = n
		}
	}
	num("CLUSTER_RATE", &s.rate)
	if v := os.Getenv("CLUSTER_SETTLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CLUSTER_SETTLE=%q: want a positive duration", v)
		}
		s.settle = d
	}
	s.crewdImage = os.Getenv("CLUSTER_CREWD_IMAGE")
	return s
}

// TestCluster is the scale-out proof: jobs through three crewd replicas on
// an R3 JetStream cluster under a steady load through every fault of
// faultsUnderLoad (each NATS server cut off or killed in turn, a crewd
// killed, a scale-down and up, a rolling restart); every job answered 202
// must succeed, and no replica attached to a healthy server may stall a
// read more than maxStall or a write more than maxWrite, or refuse one. Beside the load, the job lifecycle (lifecycle): jobs due
// later, cancels, dead letters retried, a periodic job's ticks, two named
// queues (one limited across the replicas, one paused through the faults),
// and a workflow of 1,000 steps, a fan-out and a fan-in (workflow_test.go).
func TestCluster(t *testing.T) {
	if os.Getenv("CREW_CLUSTER_TEST") == "" {
		t.Skip("the compose cluster test runs with CREW_CLUSTER_TEST=1 (deploy/compose/cluster-test.sh): it needs a Docker engine and a few minutes")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine answers (docker info failed): not run")
	}
	set := readSettings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	began := time.Now()
	transport := &http.Transport{MaxIdleConnsPerHost: 32}
	client := &http.Client{Transport: bearer{transport}}
	defer transport.CloseIdleConnections()

	cl := up(ctx, t, set, client)
	l := &load{client: client, reps: cl.reps, start: time.Now(), refused: map[string]int{}}
	cl.load = l
	lc := newLifecycle(l)
	lc.cancelRunning(ctx, t, cl, 3)
	lc.startPeriodic(ctx, t)
	lc.pauseHeld(ctx, t)
	fan := lc.postFanOut(ctx, t) // run through the faults (workflow_test.go)
	lcCtx, stopLifecycle := context.WithCancel(ctx)
	var scheduling sync.WaitGroup
	scheduling.Go(func() { lc.schedule(lcCtx, t) })
	scheduling.Go(func() { lc.feedQueues(lcCtx, t) })
	cl.faultsUnderLoad(ctx, t, set, l)
	stopLifecycle()
	scheduling.Wait()
	cl.tail(ctx, t, l)
	lc.checkFanOut(ctx, t, fan) // its steps free the workers
	lc.cancelRunning(ctx, t, cl, 3)
	succeeded, again := cl.allSucceed(ctx, t, set, l)
	lc.checkPeriodic(ctx, t)
	lc.checkQueues(ctx, t)
	lc.check(ctx, t, cl)
	cl.caughtUp(ctx, t)
	t.Logf("SUMMARY accepted %d, succeeded %d, run more than once %d, longest stall on a healthy server's replicas %.1fs (at most %v), their slowest write accepted %.2fs and %d writes refused during the faults; whole test %.0fs",
		len(l.accepted), succeeded, again, cl.worst.Seconds(), maxStall, cl.worstWrite.Seconds(), cl.writesRefused, time.Since(began).Seconds())
}

// cluster is the compose project under test and where to reach it.
type cluster struct {
	c       *compose
	client  *http.Client
	monitor map[string]string // nats1 -> its /jsz address
	reps    *replicas
	leader  string // the jobs stream's leader when the load starts
	stalls  *stalls
	worst   time.Duration // the longest stall measured, of replicas on healthy servers
	load    *load         // the steady load, whose writes fault measures
	// The slowest write accepted and the writes refused on replicas of
	// healthy servers during the faults.
	worstWrite    time.Duration
	writesRefused int
}

func phase(t *testing.T, what string, since time.Time) {
	t.Helper()
	t.Logf("%-48s %6.1fs", what, time.Since(since).Seconds())
}

// up builds the images from the tree (nothing is pulled), starts the
// project and waits until every crewd is ready and every stream is R3 with
// its followers current.
func up(ctx context.Context, t *testing.T, set settings, client *http.Client) *cluster {
	t0 := time.Now()
	crewdImage := buildImages(ctx, t, set)
	phase(t, "images built", t0)

	t0 = time.Now()
	cl := &cluster{c: newCompose(t, crewdImage, natsImage, otelcolImage), client: client, monitor: map[string]string{},
		reps: &replicas{names: crewds, addr: map[string]string{}, down: map[string]bool{}}}
	if _, err := cl.c.run(ctx, "up", "-d"); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.containers(ctx, append(natses, crewds...)...); err != nil {
		t.Fatal(err)
	}
	for _, n := range natses {
		cl.monitor[n] = cl.addr(ctx, t, n, 8222)
	}
	for _, n := range crewds {
		cl.waitReady(ctx, t, n)
	}
	cl.leader = waitStreams(ctx, t, client, cl.monitor, 60*time.Second)
	phase(t, fmt.Sprintf("cluster up, stream %s R3 led by %s", stream, cl.leader), t0)
	refusesWithoutToken(ctx, t, cl.reps.url(crewds[0], ""))
	return cl
}

// refusesWithoutToken: the API as compose serves it answers 401 to a job
// without a token (the one every request of the test sends).
func refusesWithoutToken(ctx context.Context, t *testing.T, api string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/v1/jobs", strings.NewReader(`{"kind":"sleep","duration":"1ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a job without a token: %d, want 401", resp.StatusCode)
	}
}

// The images the tests run, built from the tree (crewd's unless
// CLUSTER_CREWD_IMAGE names one).
const (
	natsImage    = "crew-nats:clustertest"
	otelcolImage = "crew-otelcol:clustertest"
)

// buildImages builds the images (nothing is pulled) and returns crewd's.
func buildImages(ctx context.Context, t *testing.T, set settings) string {
	t.Helper()
	crewdImage := "crewd:clustertest"
	buildCrewd := crewdImage
	if set.crewdImage != "" {
		crewdImage, buildCrewd = set.crewdImage, "-"
		t.Logf("crewd image %s, as it is (CLUSTER_CREWD_IMAGE)", crewdImage)
	}
	build := exec.CommandContext(ctx, filepath.Join("..", "build-images.sh"), buildCrewd, natsImage, otelcolImage)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build-images.sh: %v\n%s", err, out)
	}
	return crewdImage
}

// waitReady waits until a crewd answers 200 on /readyz, and takes its API
// address. The address is read anew each time: a crewd that cannot set up
// its stream at start (the cluster still electing its leaders) exits, and
// Docker starts it again on other host ports.
func (cl *cluster) waitReady(ctx context.Context, t *testing.T, service string) {
	t.Helper()
	var a string
	waitFor(ctx, t, 90*time.Second, service+" ready", func() (bool, string) {
		var err error
		if a, err = cl.c.addr(ctx, service, 8080); err != nil {
			return false, err.Error()
		}
		return ready(ctx, cl.client, "http://"+a+"/readyz")
	})
	cl.reps.set(service, a)
}

// allReady waits until every crewd is ready (its NATS connection up)
// before the next fault, and logs how long that took: a replica whose
// server was cut off reconnects after the cut, and a stall of its left
// from one fault is no healthy replica's stall in the next. A replica not
// ready within 90 s fails the test.
func (cl *cluster) allReady(ctx context.Context, t *testing.T) {
	t.Helper()
	began := time.Now()
	for _, n := range crewds {
		cl.waitReady(ctx, t, n)
	}
	t.Logf("every crewd ready before the next fault, after %.1fs", time.Since(began).Seconds())
}

func (cl *cluster) addr(ctx context.Context, t *testing.T, service string, port int) string {
	t.Helper()
	a, err := cl.c.addr(ctx, service, port)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// faultsUnderLoad runs a steady load through every fault Kubernetes and a
// network bring to a deployment, one after the other, each while the load
// goes on, and measures how long the replicas attached to healthy servers
// go without a good answer (stalls) and take to accept a job. Each of the
// three nats-servers is hit in turn while it leads some of the store's
// groups (three partitions: streams and buckets):
//  0. the nats-server that leads the records' bucket cut off the network
//     for 15 s;
//  1. a crewd killed (SIGKILL) while it runs slow jobs, and the server of
//     the other two that leads the most groups cut off the network, both
//     restored after 15 s;
//  2. the third nats-server killed (docker kill), once it leads a group
//     again, and started again 15 s later;
//  3. crewd scaled 3 -> 1 -> 3 (two replicas stopped with SIGTERM, as a
//     scale-down does, then started);
//  4. a rolling restart of every crewd (stopped with SIGTERM, started,
//     ready), as a rollout does.
func (cl *cluster) faultsUnderLoad(ctx context.Context, t *testing.T, set settings, l *load) {
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var polls *sync.WaitGroup
	defer func() { // on a failure too
		stopLoad()
		wg.Wait()
		if polls != nil {
			polls.Wait()
		}
	}()
	at := func() string {
		return fmt.Sprintf("at %5.1fs (%4d submitted):", time.Since(l.start).Seconds(), l.submitted.Load())
	}
	var known string
	waitFor(ctx, t, 20*time.Second, "a job to read during the faults", func() (bool, string) {
		var why string
		known, why = l.post(ctx, crewds[0], sleepSpec(0))
		return known != "", why
	})
	cl.stalls = &stalls{}
	polls = cl.stalls.watch(loadCtx, l, crewds, known)
	wg.Go(func() { l.run(loadCtx, math.MaxInt, set.rate, 16) })
	waitFor(ctx, t, time.Minute, "5 s of load", func() (bool, string) {
		return l.submitted.Load() >= int64(5*set.rate), ""
	})

	// 0. The records bucket's leader cut off, first, while the replicas are
	// still spread over the servers as they first connected: accepting a
	// job rests on the jobs stream alone, and any replica of the bucket
	// answers a read.
	_, led, _ := leaders(ctx, cl.client, cl.monitor)
	kv := led[bucketStream]
	if kv == "" {
		t.Fatalf("no leader of %s", bucketStream)
	}
	on := cl.attached(ctx, kv)
	if err := cl.c.disconnect(ctx, kv); err != nil {
		t.Fatal(err)
	}
	kvCutAt := time.Now()
	also := ""
	if kv == cl.leader {
		also = ", and of the jobs stream"
	}
	t.Logf("%s cut %s, the records bucket's leader%s and of %v, off the network (crewd replicas connected to it: %v)", at(), kv, also, leading(led, kv), on)
	sleep(ctx, faultFor)
	if err := cl.c.connect(ctx, kv); err != nil {
		t.Fatal(err)
	}
	cl.fault(t, "network cut of "+kv+" (records bucket's leader)", on, kvCutAt, time.Now())
	cl.monitor[kv] = cl.addr(ctx, t, kv, 8222)
	t.Logf("%s %s back on the network", at(), kv)
	cl.leader = waitStreams(ctx, t, cl.client, cl.monitor, 90*time.Second)

	cl.allReady(ctx, t)

	// 1. A crewd killed, another server cut off: the one of the other two
	// that leads the most partitions' groups.
	cut, victim := cl.pickFaults(ctx, t, []string{kv})
	_, led, _ = leaders(ctx, cl.client, cl.monitor)
	admin := cl.addr(ctx, t, victim, 9090)
	l.burst(ctx, burstJobs, slowSpec)
	t.Logf("%s submitted %d slow jobs (3 s)", at(), burstJobs)
	var busy int
	waitFor(ctx, t, 10*time.Second, victim+" running jobs", func() (bool, string) {
		n, err := workersBusy(ctx, cl.client, admin)
		busy = n
		return err == nil && n > 0, fmt.Sprintf("crew_workers_busy %d (%v)", n, err)
	})
	restartsBefore := cl.restarts(ctx, victim)
	cl.reps.setDown(victim)
	if err := cl.c.kill(ctx, victim); err != nil {
		t.Fatal(err)
	}
	on = cl.attached(ctx, cut)
	if err := cl.c.disconnect(ctx, cut); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	t.Logf("%s killed %s (SIGKILL) while it ran %d jobs; cut %s, the leader of %v, off the network (crewd replicas connected to it: %v)",
		at(), victim, busy, cut, leading(led, cut), on)
	sleep(ctx, faultFor)
	if err := cl.c.connect(ctx, cut); err != nil {
		t.Fatal(err)
	}
	cl.fault(t, "network cut of "+cut, append([]string{victim}, on...), cutAt, time.Now())
	cl.monitor[cut] = cl.addr(ctx, t, cut, 8222) // published anew when back
	startedAt := time.Now()
	if err := cl.c.start(ctx, victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s back on the network, %s started again", at(), cut, victim)
	cl.waitReady(ctx, t, victim)
	n := cl.restarts(ctx, victim) - restartsBefore
	t.Logf("%s %s ready (exited at start and restarted by Docker %d times on the way)", at(), victim, n)
	if n > 0 {
		logs, _ := exec.CommandContext(ctx, "docker", "logs", "--since", startedAt.Format(time.RFC3339Nano), cl.c.ids[victim]).CombinedOutput()
		var why []string
		for line := range strings.Lines(string(logs)) {
			if !strings.Contains(line, `"msg":"request`) && !strings.HasPrefix(line, "  curl") {
				why = append(why, strings.TrimSpace(line))
			}
		}
		t.Logf("%s's lines since it was started again:\n%s", victim, strings.Join(why[:min(len(why), 30)], "\n"))
	}
	waitStreams(ctx, t, cl.client, cl.monitor, 90*time.Second)
	// Partitions' leaders moved by the cut go back to their servers
	// (jsjobs.Partitioned.Balance, every 30 s): the third server leads
	// some again before it is killed.
	var third string
	for _, n := range natses {
		if n != kv && n != cut {
			third = n
		}
	}
	waitFor(ctx, t, 75*time.Second, third+" leading a partition's group again", func() (bool, string) {
		_, led, _ = leaders(ctx, cl.client, cl.monitor)
		return len(leading(led, third)) > 0, fmt.Sprintf("leaders %v", led)
	})

	cl.allReady(ctx, t)

	// 2. The third server killed: each of the three has now been cut or
	// killed while it led some of the store's groups.
	leader := third
	on = cl.attached(ctx, leader)
	if err := cl.c.kill(ctx, leader); err != nil {
		t.Fatal(err)
	}
	killAt := time.Now()
	t.Logf("%s killed %s, the leader of %v (crewd replicas connected to it: %v)", at(), leader, leading(led, leader), on)
	sleep(ctx, faultFor)
	cl.fault(t, "kill of "+leader, on, killAt, time.Now())
	if err := cl.c.start(ctx, leader); err != nil {
		t.Fatal(err)
	}
	cl.monitor[leader] = cl.addr(ctx, t, leader, 8222)
	t.Logf("%s %s started again", at(), leader)
	waitStreams(ctx, t, cl.client, cl.monitor, 90*time.Second)

	// 3. Scaled down to one replica and up again, with SIGTERM.
	for _, r := range crewds[1:] {
		cl.reps.setDown(r)
		if err := cl.c.stop(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s scaled down to %s (the others stopped with SIGTERM)", at(), crewds[0])
	sleep(ctx, faultFor/3)
	for _, r := range crewds[1:] {
		if err := cl.c.start(ctx, r); err != nil {
			t.Fatal(err)
		}
		cl.waitReady(ctx, t, r)
	}
	t.Logf("%s scaled up to three again", at())

	// 4. A rolling restart.
	for _, r := range crewds {
		cl.reps.setDown(r)
		if err := cl.c.stop(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := cl.c.start(ctx, r); err != nil {
			t.Fatal(err)
		}
		cl.waitReady(ctx, t, r)
	}
	t.Logf("%s rolling restart of every crewd done", at())

	stopLoad()
	wg.Wait()
	t.Logf("submitted %d + %d slow jobs in %.1fs: %d accepted (202), %d of them by a second replica; refused: %v",
		l.submitted.Load()-burstJobs, burstJobs, time.Since(l.start).Seconds(), len(l.accepted), l.retried, l.refused)
	if int64(len(l.accepted)) < l.submitted.Load()/2 {
		t.Errorf("only %d of %d jobs accepted: the cluster should take most of them through the faults", len(l.accepted), l.submitted.Load())
	}
}

// pickFaults chooses the server to cut off and the crewd to kill: of the
// servers not yet faulted (done), the one leading the most of the store's
// groups (streams and buckets), a crewd attached to it, unless that would
// leave no live replica on a healthy server to measure (every crewd
// attached to it: then the server with the fewest crewds is cut instead,
// and said).
func (cl *cluster) pickFaults(ctx context.Context, t *testing.T, done []string) (cut, victim string) {
	_, led, _ := leaders(ctx, cl.client, cl.monitor)
	var candidates []string
	for _, n := range natses {
		if !contains(done, n) {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		candidates = slices.Clone(natses)
	}
	sort.SliceStable(candidates, func(i, j int) bool { return len(leading(led, candidates[i])) > len(leading(led, candidates[j])) })
	cut = candidates[0]
	on := cl.attached(ctx, cut)
	if len(on) == len(crewds) {
		was := cut
		for _, n := range candidates {
			if o := cl.attached(ctx, n); len(o) < len(on) {
				cut, on = n, o
			}
		}
		t.Logf("every crewd is attached to %s: %s, with %v, is cut instead", was, cut, on)
	}
	victim = crewds[1]
	healthy := 0
	for _, n := range crewds {
		if !contains(on, n) {
			healthy++
		}
	}
	switch {
	case len(on) > 0:
		victim = on[0] // excluded from the measure either way
	case healthy < 2:
		t.Fatalf("placement %v on %s: no replica would be left to measure", on, cut)
	}
	return cut, victim
}

// leading names the streams (jobs streams and buckets' streams) server
// leads, sorted.
func leading(led map[string]string, server string) []string {
	var out []string
	for s, l := range led {
		if l == server {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// faultFor is how long a NATS server stays cut off or killed, and three
// times how long crewd stays scaled down.
const faultFor = 15 * time.Second

// fault measures the stalls of one fault's window and fails the test if a
// replica not excluded stalled longer than maxStall.
func (cl *cluster) fault(t *testing.T, what string, excluded []string, from, to time.Time) {
	t.Helper()
	worst, line := cl.stalls.report(crewds, excluded, from, to)
	cl.worst = max(cl.worst, worst)
	measured := 0
	for _, n := range crewds {
		if !contains(excluded, n) {
			measured++
		}
	}
	if measured == 0 {
		line += " (every replica was on the faulty server or down: none measured)"
	}
	t.Logf("%s for %.0fs: longest stall without a good answer:%s", what, to.Sub(from).Seconds(), line)
	writes := ""
	var slowestWrite time.Duration
	refusedWrites := 0
	for _, n := range crewds {
		if contains(excluded, n) {
			continue
		}
		slowest, refused := cl.load.writeStalls(n, from, to)
		writes += fmt.Sprintf(" %s slowest %.2fs, %d refused;", n, slowest.Seconds(), refused)
		slowestWrite = max(slowestWrite, slowest)
		refusedWrites += refused
	}
	cl.worstWrite = max(cl.worstWrite, slowestWrite)
	cl.writesRefused += refusedWrites
	if writes != "" {
		t.Logf("%s: writes on healthy servers' replicas:%s", what, writes)
	}
	if slowestWrite > maxWrite || refusedWrites > 0 {
		t.Errorf("%s: a replica attached to a healthy server took %.2fs to accept a job (at most %v) and refused %d (none)", what, slowestWrite.Seconds(), maxWrite, refusedWrites)
	}
	if worst > maxStall {
		t.Errorf("%s: a replica attached to a healthy server stalled %.1fs, more than %v", what, worst.Seconds(), maxStall)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// attached names the crewd replicas connected to a nats-server; all of
// them when it cannot tell.
func (cl *cluster) attached(ctx context.Context, server string) []string {
	ips, err := clientIPs(ctx, cl.client, cl.monitor[server], "crewd")
	if err != nil {
		return slices.Clone(crewds)
	}
	var names []string
	for _, n := range crewds {
		ip, err := cl.c.docker(ctx, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", cl.c.ids[n])
		if err == nil && slices.Contains(ips, ip) {
			names = append(names, n)
		}
	}
	return names
}

// restarts is how often Docker restarted a service's container after it
// exited by itself (its restart policy), -1 when it cannot say.
func (cl *cluster) restarts(ctx context.Context, service string) int {
	out, err := cl.c.docker(ctx, "inspect", "-f", "{{.RestartCount}}", cl.c.ids[service])
	n, err2 := strconv.Atoi(out)
	if err != nil || err2 != nil {
		return -1
	}
	return n
}

// burstJobs is the number of slow jobs submitted just before the kill:
// more than the three replicas run at once (16 workers each), so that
// each, the victim too, is sure to have some.
const burstJobs = 100

// tail submits a few jobs to each replica in turn, the restarted one
// included: each must accept them.
func (cl *cluster) tail(ctx context.Context, t *testing.T, l *load) {
	for _, n := range crewds {
		for i := range 10 {
			var id, why string
			waitFor(ctx, t, 20*time.Second, n+" accepting jobs after the faults", func() (bool, string) {
				id, why = l.post(ctx, n, sleepSpec(i))
				return id != "", why
			})
			l.accepted = append(l.accepted, accepted{ID: id, Via: n, At: time.Since(l.start)})
		}
	}
	t.Logf("every replica accepted 10 more jobs after the faults")
}

// allSucceed waits until every accepted job has succeeded, and counts the
// jobs run more than once when the records show attempts.
func (cl *cluster) allSucceed(ctx context.Context, t *testing.T, set settings, l *load) (succeeded, again int) {
	t0 := time.Now()
	awaitCtx, stop := context.WithTimeout(ctx, set.settle)
	out := l.await(awaitCtx, 16)
	stop()
	if len(out.pending) == 0 {
		phase(t, fmt.Sprintf("all %d accepted jobs succeeded", len(l.accepted)), t0)
	} else {
		states := map[string]int{}
		for _, id := range out.pending {
			states[out.records[id].state()]++
		}
		t.Errorf("%d of %d accepted jobs did not succeed within %v of the last submission (by state; \"\": no record): %v",
			len(out.pending), len(l.accepted), set.settle, states)
		via := map[string]string{}
		for _, a := range l.accepted {
			via[a.ID] = a.Via
		}
		for _, id := range out.pending[:min(10, len(out.pending))] {
			t.Logf("  job %s (accepted by %s): %v", id, via[id], out.records[id])
		}
	}

	// At-least-once: the jobs the victim was running ran again elsewhere.
	shown := false
	succeeded = len(l.accepted) - len(out.pending)
	for _, r := range out.records {
		n := r.attempts()
		shown = shown || n > 0
		if n > 1 {
			again++
		}
	}
	switch {
	case !shown:
		t.Logf("the job records show no attempt count: jobs run twice not counted")
	case again == 0:
		t.Errorf("no job record shows a second attempt, yet a crewd was killed while running jobs")
	default:
		t.Logf("jobs run more than once (attempts > 1): %d of %d", again, len(out.records))
	}
	return succeeded, again
}

// caughtUp waits until the cut server is a current follower again (every
// stream R3, every follower current) and the consumer has nothing left.
func (cl *cluster) caughtUp(ctx context.Context, t *testing.T) {
	t0 := time.Now()
	waitStreams(ctx, t, cl.client, cl.monitor, 60*time.Second)
	waitFor(ctx, t, 30*time.Second, "consumer "+durable+" with nothing outstanding", func() (bool, string) {
		details, _, errs := leaders(ctx, cl.client, cl.monitor)
		if len(errs) > 0 {
			return false, strings.Join(errs, "; ")
		}
		for _, cd := range details[stream].Consumers {
			if cd.Name == durable {
				return cd.NumAckPending == 0 && cd.NumPending == 0,
					fmt.Sprintf("ack pending %d, pending %d", cd.NumAckPending, cd.NumPending)
			}
		}
		return false, "no consumer " + durable + " on the stream leader"
	})
	phase(t, "streams R3 and current again, consumer drained", t0)
}

// workersBusy reads crew_workers_busy of crewd's pool from its /metrics.
func workersBusy(ctx context.Context, client *http.Client, admin string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, `crew_workers_busy{pool="crewd"} `); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("no crew_workers_busy{pool=\"crewd\"} in %s/metrics", admin)
}

// ready reports whether a crewd answers 200 on /readyz.
func ready(ctx context.Context, client *http.Client, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}

// leaders reads every stream from its leader's /jsz (only the leader
// knows whether its followers are current), by stream name, with the
// leader's name (each server is named after its compose service).
func leaders(ctx context.Context, client *http.Client, monitor map[string]string) (map[string]streamDetail, map[string]string, []string) {
	var names []string
	for n := range monitor {
		names = append(names, n)
	}
	sort.Strings(names)
	details, leader := map[string]streamDetail{}, map[string]string{}
	var seen []string
	var errs []string
	for _, n := range names {
		z, err := readJSZ(ctx, client, monitor[n])
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, a := range z.Accounts {
			for _, s := range a.Streams {
				if _, ok := leader[s.Name]; !ok && !contains(seen, s.Name) {
					seen = append(seen, s.Name)
				}
				if s.Cluster.Leader == n {
					details[s.Name], leader[s.Name] = s, n
				}
			}
		}
	}
	for _, s := range seen {
		if _, ok := leader[s]; !ok {
			errs = append(errs, "no server says it leads stream "+s)
		}
	}
	return details, leader, errs
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// waitStreams waits until the jobs stream exists and every stream (the
// jobs stream and the job records' KV bucket) has three replicas, a
// leader and every follower current; it returns the jobs stream's leader.
func waitStreams(ctx context.Context, t *testing.T, client *http.Client, monitor map[string]string, within time.Duration) string {
	t.Helper()
	var leader string
	waitFor(ctx, t, within, "every stream R3 with every follower current", func() (bool, string) {
		details, leaders, errs := leaders(ctx, client, monitor)
		if len(errs) > 0 {
			return false, strings.Join(errs, "; ")
		}
		if _, ok := details[stream]; !ok {
			return false, "no stream " + stream
		}
		var names []string
		for n := range details {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if ok, why := details[n].healthy(3); !ok {
				return false, why
			}
		}
		leader = leaders[stream]
		return true, ""
	})
	return leader
}

// waitFor polls cond until it holds, failing the test after within with
// cond's last word on why not.
func waitFor(ctx context.Context, t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within %v: %s", what, within, why)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}
