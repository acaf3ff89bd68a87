package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crew-go/crew/jobs"
)

// crewd dash: the jobs by state, the queues, and the last half hour's
// ends a minute as a bar of block characters, drawn again every -every
// until interrupted (asynq's dash, in a screen). Each frame is three
// reads of the API (counts, queues, ends), the store's own counts and
// index: no scan.

// dashMinutes is the span of the frame's ends.
const dashMinutes = 30

// dash draws frames until SIGINT (or one with once).
func (c *client) dash(stdout, stderr io.Writer, every time.Duration, once bool) int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	defer signal.Stop(stop)
	for {
		var frame strings.Builder
		if err := c.frame(&frame); err != nil {
			fmt.Fprintf(stderr, "crewd dash: %v\n", err)
			return ExitFail
		}
		if !once {
			fmt.Fprint(stdout, "\x1b[H\x1b[2J") // home, clear
		}
		fmt.Fprint(stdout, frame.String())
		if once {
			return ExitOK
		}
		select {
		case <-stop:
			return ExitOK
		case <-time.After(every):
		}
	}
}

// frame is one screen.
func (c *client) frame(w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get := func(path string, v any) error {
		status, body, err := c.do(ctx, "GET", path)
		if err != nil {
			return err
		}
		if status >= 300 {
			var e struct{ Error string }
			_ = json.Unmarshal(body, &e)
			return fmt.Errorf("GET %s: %d: %s", path, status, cmpOr(e.Error, strings.TrimSpace(string(body))))
		}
		return json.Unmarshal(body, v)
	}
	var counts struct{ Counts jobs.Counts }
	if err := get("/v1/jobs/counts", &counts); err != nil {
		return err
	}
	fmt.Fprintf(w, "crewd at %s, %s UTC\n\nJOBS\n", c.base, time.Now().UTC().Format(time.TimeOnly))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, st := range jobs.States {
		fmt.Fprintf(tw, "%s\t", st)
	}
	fmt.Fprintln(tw)
	for _, st := range jobs.States {
		fmt.Fprintf(tw, "%d\t", counts.Counts[st])
	}
	fmt.Fprintln(tw)
	_ = tw.Flush()
	var qs struct{ Queues []jobs.QueueInfo }
	if err := get("/v1/queues", &qs); err == nil { // a store without queues (memory) has no table
		var body []byte
		body, _ = json.Marshal(qs)
		fmt.Fprintln(w, "\nQUEUES")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		_ = printQueues(tw, body)
		_ = tw.Flush()
	}
	var ends struct{ Minutes []jobs.Ends }
	if err := get(fmt.Sprintf("/v1/jobs/ends?minutes=%d", dashMinutes), &ends); err == nil {
		ok, bad := make([]int, len(ends.Minutes)), make([]int, len(ends.Minutes))
		for i, m := range ends.Minutes {
			ok[i], bad[i] = m.Counts[jobs.Succeeded], m.Counts[jobs.Failed]+m.Counts[jobs.TimedOut]
		}
		fmt.Fprintf(w, "\nENDED A MINUTE, the last %d minutes (now on the right)\n", dashMinutes)
		fmt.Fprintf(w, "succeeded  %s  %d in all\n", bars(ok), sum(ok))
		fmt.Fprintf(w, "failed     %s  %d in all\n", bars(bad), sum(bad))
	}
	return nil
}

// bars draws ns as block characters, scaled to the largest.
func bars(ns []int) string {
	const blocks = " ▁▂▃▄▅▆▇█"
	levels := []rune(blocks)
	top := 0
	for _, n := range ns {
		top = max(top, n)
	}
	var b strings.Builder
	for _, n := range ns {
		i := 0
		if n > 0 {
			i = max(1, n*(len(levels)-1)/max(top, 1))
		}
		b.WriteRune(levels[i])
	}
	return b.String()
}

func sum(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}
