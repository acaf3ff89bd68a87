package e2e_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrewdUpgradedToPartitions: a crewd of one partition takes a job due
// in 4 s and stops; started again on the same store with -job-partitions
// 3, it runs that job where it waits (partition 0, the store it had), and
// spreads new jobs over the three partitions, each run and read by its
// id; /v1/replicas names the six streams and buckets.
func TestCrewdUpgradedToPartitions(t *testing.T) {
	dir := t.TempDir()
	a := start(t, "-data-dir", dir)
	due := post(a.http+"/v1/jobs", `{"kind":"factorial","n":4,"delay":"4s"}`)
	if due.code != 202 {
		t.Fatalf("a job due later: %+v", due)
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	<-a.exited

	b := start(t, "-data-dir", dir, "-job-partitions", "3")
	byPartition := map[string]int{}
	var ids []string
	for range 30 {
		o := post(b.http+"/v1/jobs", `{"kind":"factorial","n":5}`)
		if o.code != 202 {
			t.Fatalf("a job: %+v", o)
		}
		ids = append(ids, o.jobID)
		byPartition[o.jobID[:2]]++
	}
	if byPartition["00"] != 10 || byPartition["01"] != 10 || byPartition["02"] != 10 {
		t.Errorf("30 jobs over three partitions: %v, want 10 each", byPartition)
	}
	for _, id := range ids {
		waitJob(t, b, id, "succeeded", 20*time.Second)
	}
	waitJob(t, b, due.jobID, "succeeded", 20*time.Second)
	resp, err := client.Get(b.http + "/v1/replicas")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Store []struct{ Name string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range body.Store {
		names = append(names, g.Name)
	}
	if got := strings.Join(names, " "); got != "jobs KV_jobs jobs-1 KV_jobs-1 jobs-2 KV_jobs-2" {
		t.Errorf("the store's parts: %s", got)
	}
}
