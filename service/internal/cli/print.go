package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crew-go/crew/jobs"
)

func printJobs(w io.Writer, body []byte) error {
	var page jobs.Page
	if err := json.Unmarshal(body, &page); err != nil {
		return err
	}
	fmt.Fprintln(w, "ID\tKIND\tQUEUE\tSTATE\tATTEMPTS\tCREATED\tSUBMITTER\tERROR")
	for _, r := range page.Jobs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%.60s\n", r.ID, r.Kind, cmpOr(r.Queue, jobs.DefaultQueue), r.State, r.Attempts,
			r.Created.UTC().Format(time.DateTime), r.Submitter, r.Error)
	}
	if page.Next != "" {
		fmt.Fprintf(w, "more: -after %s\n", page.Next)
	}
	return nil
}

// maxParentsShown is how many of a job's parents printJob lists: a join
// may have thousands.
const maxParentsShown = 20

func printJob(w io.Writer, body []byte) error {
	var r jobs.Record
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	fmt.Fprintf(w, "id\t%s\nkind\t%s\nqueue\t%s\nstate\t%s\nattempts\t%d\ncreated\t%s\n", r.ID, r.Kind, cmpOr(r.Queue, jobs.DefaultQueue), r.State, r.Attempts, r.Created.UTC().Format(time.RFC3339))
	if r.Progress != nil {
		fmt.Fprintf(w, "progress\t%s\n", progressLine(r.Progress, time.Now()))
	}
	if n := len(r.After); n > maxParentsShown {
		fmt.Fprintf(w, "after\t%s … (%d in all; -json lists them)\n", strings.Join(r.After[:maxParentsShown], " "), n)
	} else if n > 0 {
		fmt.Fprintf(w, "after\t%s\n", strings.Join(r.After, " "))
	}
	if r.Retries > 0 {
		fmt.Fprintf(w, "retries\t%d\n", r.Retries)
	}
	if r.Submitter != "" {
		fmt.Fprintf(w, "submitter\t%s\n", r.Submitter)
	}
	if !r.Finished.IsZero() {
		fmt.Fprintf(w, "finished\t%s\n", r.Finished.UTC().Format(time.RFC3339))
	}
	if len(r.Result) > 0 {
		fmt.Fprintf(w, "result\t%s\n", r.Result)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error\t%s\n", r.Error)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "attempt %d\t%s %s\n", e.Attempt, e.At.UTC().Format(time.RFC3339), e.Error)
	}
	return nil
}

func printCounts(w io.Writer, body []byte) error {
	var c struct{ Counts jobs.Counts }
	if err := json.Unmarshal(body, &c); err != nil {
		return err
	}
	for _, s := range jobs.States {
		fmt.Fprintf(w, "%s\t%d\n", s, c.Counts[s])
	}
	return nil
}

func printQueues(w io.Writer, body []byte) error {
	var q struct{ Queues []jobs.QueueInfo }
	if err := json.Unmarshal(body, &q); err != nil {
		return err
	}
	fmt.Fprintln(w, "QUEUE\tWAITING\tTAKEN\tLIMIT\tRATE\tOLDEST WAITING\tPAUSED")
	for _, qi := range q.Queues {
		limit, rate, oldest := "none", cmp.Or(qi.RateString(), "none"), ""
		if qi.Limit > 0 {
			limit = fmt.Sprint(qi.Limit)
		}
		if !qi.OldestWaiting.IsZero() {
			oldest = time.Since(qi.OldestWaiting).Round(time.Second).String()
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%v\n", qi.Name, qi.Waiting, qi.Taken, limit, rate, oldest, qi.Paused)
	}
	return nil
}

func printReplicas(w io.Writer, body []byte) error {
	var r struct {
		Replicas []jobs.Replica
		Store    []jobs.StoreGroup
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	fmt.Fprintln(w, "REPLICA\tSERVING FOR\tHEARD\tRUNNING\tLONGEST RUNNING")
	for _, rep := range r.Replicas {
		var longest []string
		for _, j := range rep.Jobs[:min(len(rep.Jobs), 3)] {
			longest = append(longest, fmt.Sprintf("%s %s (%s)", j.ID, j.Kind, time.Since(j.Since).Round(time.Second)))
		}
		fmt.Fprintf(w, "%s\t%s\t%s ago\t%d\t%s\n", rep.Name, time.Since(rep.Started).Round(time.Second), time.Since(rep.Seen).Round(100*time.Millisecond),
			rep.Running, strings.Join(longest, ", "))
	}
	fmt.Fprintln(w, "\nSTORE PART\tLEADER\tFOLLOWERS")
	for _, g := range r.Store {
		var fs []string
		for _, f := range g.Followers {
			state := "current"
			switch {
			case f.Offline:
				state = "offline"
			case !f.Current:
				state = fmt.Sprintf("%d behind", f.Lag)
			}
			fs = append(fs, f.Name+" "+state)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", g.Name, cmp.Or(g.Leader, "NONE (electing)"), cmp.Or(strings.Join(fs, ", "), "none (one server)"))
	}
	return nil
}

func printDeleted(w io.Writer, body []byte) error {
	var d struct {
		ID    string
		State jobs.State
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\tdeleted (it had %s)\n", d.ID, d.State)
	return nil
}

func printEnds(w io.Writer, body []byte) error {
	var e struct{ Minutes []jobs.Ends }
	if err := json.Unmarshal(body, &e); err != nil {
		return err
	}
	fmt.Fprintln(w, "MINUTE\tSUCCEEDED\tFAILED\tTIMED OUT\tCANCELED")
	for _, m := range e.Minutes {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", m.Minute.UTC().Format("15:04"), m.Counts[jobs.Succeeded], m.Counts[jobs.Failed], m.Counts[jobs.TimedOut], m.Counts[jobs.Canceled])
	}
	return nil
}

// progressLine is a running job's progress for a person: its percentage,
// its note and how long ago it was reported.
func progressLine(p *jobs.ProgressReport, now time.Time) string {
	s := fmt.Sprintf("%.0f%%", 100*p.Fraction)
	if p.Note != "" {
		s += " " + p.Note
	}
	return s + fmt.Sprintf(" (%v ago)", now.Sub(p.At).Round(time.Second))
}

// printWorkflow prints a workflow: its state and counts, then a line a
// step (its name, job, state, and the steps it waits for).
func printWorkflow(w io.Writer, body []byte) error {
	var wf struct {
		ID     string
		State  jobs.State
		Counts jobs.Counts
		Steps  []struct {
			Name, ID string
			After    []string
			State    jobs.State
			Error    string
		}
	}
	if err := json.Unmarshal(body, &wf); err != nil {
		return err
	}
	state := "running"
	if wf.State.Terminal() {
		state = "ended"
	}
	var counts []string
	for _, s := range jobs.States {
		if n := wf.Counts[s]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, s))
		}
	}
	fmt.Fprintf(w, "workflow %s %s: %d steps, %s\n", wf.ID, state, len(wf.Steps), strings.Join(counts, ", "))
	fmt.Fprintln(w, "STEP\tJOB\tSTATE\tAFTER\tERROR")
	for _, s := range wf.Steps {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.ID, s.State, strings.Join(s.After, ","), s.Error)
	}
	return nil
}
