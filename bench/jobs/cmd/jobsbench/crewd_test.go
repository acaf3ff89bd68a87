package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCrewdWaitAllReadsTheRecords drives crewdSystem's Enqueue and WaitAll
// against a stand-in for crewd's API: every job answers queued, then
// running, then its end; one answers 503 first (crewd restarting); one
// answers 404 (lost), one 404 once and its end after (crewd's answer wrong);
// one ends failed (not counted as ended). The ends
// are the records' "finished" times and the runs their "attempts".
func TestCrewdWaitAllReadsTheRecords(t *testing.T) {
	const jobs = 20
	finished := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	var (
		mu    sync.Mutex
		polls = map[string]int{}
	)
	mux := http.NewServeMux()
	next := 0
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id := fmt.Sprintf("%016x", next)
		next++
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":%q,"state":"queued"}`, id)
	})
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		mu.Lock()
		polls[id]++
		n := polls[id]
		mu.Unlock()
		switch {
		case id == fmt.Sprintf("%016x", 3), id == fmt.Sprintf("%016x", 6) && n == 1:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"no job"}`)
		case id == fmt.Sprintf("%016x", 6):
			fmt.Fprintf(w, `{"id":%q,"state":"succeeded","attempts":1,"finished":%q}`, id, finished.Format(time.RFC3339Nano))
		case id == fmt.Sprintf("%016x", 4) && n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case n == 1:
			fmt.Fprintf(w, `{"id":%q,"state":"queued"}`, id)
		case n == 2:
			fmt.Fprintf(w, `{"id":%q,"state":"running","attempts":1}`, id)
		case id == fmt.Sprintf("%016x", 5):
			fmt.Fprintf(w, `{"id":%q,"state":"failed","attempts":1,"finished":%q}`, id, finished.Format(time.RFC3339Nano))
		default:
			fmt.Fprintf(w, `{"id":%q,"state":"succeeded","attempts":2,"finished":%q}`, id, finished.Format(time.RFC3339Nano))
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tr := newTracker(jobs)
	s := &crewdSystem{
		sc: scenario{Jobs: jobs, Sleep: time.Millisecond}, t: tr, url: srv.URL, pollers: 3,
		ids: make([]string, jobs), final: make([]bool, jobs), http: srv.Client(),
	}
	ctx := context.Background()
	for n := range jobs {
		if err := s.Enqueue(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WaitAll(ctx); err != nil {
		t.Fatal(err)
	}
	sum := tr.summary()
	if sum.Ended != jobs-3 || sum.Rerun != jobs-3 || !sum.Last.Equal(finished) {
		t.Errorf("ended %d rerun %d last %v, want %d %d %v", sum.Ended, sum.Rerun, sum.Last, jobs-3, jobs-3, finished)
	}
	// Each 404 asked again: one still 404, one a wrong answer (it is there).
	n, state, err := s.StoreState(ctx)
	if err != nil || n != 0 || !strings.Contains(state, "2 answered 404") ||
		!strings.Contains(state, fmt.Sprintf("%016x 404", 3)) || !strings.Contains(state, fmt.Sprintf("%016x succeeded", 6)) {
		t.Errorf("store state %d %q %v", n, state, err)
	}
}

func TestCrewdEnqueueSaysWhyARequestFailed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"job records full"}`)
	}))
	defer srv.Close()
	s := &crewdSystem{sc: scenario{Jobs: 1, Sleep: time.Millisecond}, url: srv.URL, ids: make([]string, 1), http: srv.Client()}
	err := s.Enqueue(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "job records full") {
		t.Fatalf("err %v", err)
	}
}
