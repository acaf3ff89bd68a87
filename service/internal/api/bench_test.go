package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/api"
	"github.com/crew-go/crew/service/internal/kinds"
	"golang.org/x/sync/errgroup"
)

// The same online handler with the numbers' factorials computed three
// ways: crew (a group on a bounded pool, crewd's), errgroup with a limit of
// GOMAXPROCS, and a goroutine per number.
var strategies = map[string]func(ctx context.Context, pool *crew.Pool, numbers []int) ([]uint64, error){
	"crew": api.Factorials,
	"errgroup": func(ctx context.Context, _ *crew.Pool, numbers []int) ([]uint64, error) {
		out := make([]uint64, len(numbers))
		g, _ := errgroup.WithContext(ctx)
		g.SetLimit(workers)
		for i, n := range numbers {
			g.Go(func() error { out[i] = kinds.Of(n); return nil })
		}
		return out, g.Wait()
	},
	"goroutines": func(ctx context.Context, _ *crew.Pool, numbers []int) ([]uint64, error) {
		out := make([]uint64, len(numbers))
		var wg sync.WaitGroup
		for i, n := range numbers {
			wg.Go(func() { out[i] = kinds.Of(n) })
		}
		wg.Wait()
		return out, nil
	},
}

// workers is the errgroup's limit: the pool's default bound.
var workers = runtime.GOMAXPROCS(0)

// BenchmarkFactorialHTTP is the goapp worker-pool article's load test
// through HTTP: POST /v1/factorial with 1, 100 and 1024 numbers, by
// parallel clients, with each strategy in the same run. ns/number is the
// cost per task, requests/s the throughput.
func BenchmarkFactorialHTTP(b *testing.B) {
	for _, n := range []int{1, 100, 1024} {
		body := `{"numbers":[` + strings.TrimSuffix(strings.Repeat("20,", n), ",") + `]}`
		for _, name := range []string{"crew", "errgroup", "goroutines"} {
			b.Run(fmt.Sprintf("numbers=%d/%s", n, name), func(b *testing.B) {
				pool, err := crew.New(crew.WithQueueSize(4096))
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				a := &api.API{Pool: pool, MaxNumbers: 4096, MaxBody: 1 << 20, RequestTimeout: time.Minute,
					RetryAfter: time.Second, Factorial: strategies[name]}
				srv := httptest.NewServer(a.Handler())
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				defer client.CloseIdleConnections()
				b.SetParallelism(4)
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						resp, err := client.Post(srv.URL+"/v1/factorial", "application/json", strings.NewReader(body))
						if err != nil {
							b.Error(err)
							return
						}
						resp.Body.Close()
						if resp.StatusCode != 200 {
							b.Errorf("status %d", resp.StatusCode)
							return
						}
					}
				})
				elapsed := time.Since(start)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "requests/s")
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*n), "ns/number")
			})
		}
	}
}

// BenchmarkSubmitHTTP: POST /v1/jobs through HTTP into memjobs, with the
// audit line each submit writes (a JSON log) and without a log: what the
// audit costs a submit.
func BenchmarkSubmitHTTP(b *testing.B) {
	for _, name := range []string{"audit", "no-log"} {
		b.Run(name, func(b *testing.B) {
			pool, err := crew.New(crew.WithQueueSize(crew.MaxQueueSize))
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			a := &api.API{Pool: pool, MaxNumbers: 16, MaxBody: 4096, RequestTimeout: time.Minute, RetryAfter: time.Second,
				Jobs: &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(1000, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Second, MaxTimeout: time.Minute}}
			if name == "audit" {
				a.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
			}
			srv := httptest.NewServer(a.Handler())
			defer srv.Close()
			client := srv.Client()
			b.ResetTimer()
			for b.Loop() {
				resp, err := client.Post(srv.URL+"/v1/jobs", "application/json", strings.NewReader(`{"kind":"factorial","n":5}`))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 202 {
					b.Fatalf("%d", resp.StatusCode)
				}
			}
		})
	}
}
