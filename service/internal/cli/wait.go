package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crew-go/crew/jobs"
)

// waitEvery is how often "crewd jobs wait" reads the job: four times as
// often as a store writes a job's progress at most, so that a report kept
// for ProgressEvery is read (read as often as written, the two in phase,
// a read just before each write missed every other one).
const waitEvery = jobs.ProgressEvery / 4

// wait follows job id until it ends: a line each time its state or its
// progress changes (read every waitEvery with GET /v1/jobs/{id}), then
// its record. It exits 0 for a job that succeeded, 1 for any other end or
// an answer that is not the job's.
func (c *client) wait(id string, stdout, stderr io.Writer, asJSON bool) int {
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		status, body, err := c.do(ctx, "GET", "/v1/jobs/"+url.PathEscape(id))
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "crewd jobs wait: %v\n", err)
			return ExitFail
		}
		if status >= 300 {
			var e struct{ Error string }
			_ = json.Unmarshal(body, &e)
			fmt.Fprintf(stderr, "crewd jobs wait: %d %s: %s\n", status, http.StatusText(status), cmpOr(e.Error, strings.TrimSpace(string(body))))
			return ExitFail
		}
		var r jobs.Record
		if err := json.Unmarshal(body, &r); err != nil {
			fmt.Fprintf(stderr, "crewd jobs wait: the answer: %v\n", err)
			return ExitFail
		}
		if r.State.Terminal() {
			if asJSON {
				_, _ = stdout.Write(body)
				fmt.Fprintln(stdout)
			} else {
				tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
				_ = printJob(tw, body)
				_ = tw.Flush()
			}
			if r.State != jobs.Succeeded {
				return ExitFail
			}
			return ExitOK
		}
		now := string(r.State)
		if r.Progress != nil {
			// Its percentage and note: the age alone is no change.
			now += fmt.Sprintf(" %.0f%% %s", 100*r.Progress.Fraction, r.Progress.Note)
		}
		if now != last && !asJSON {
			fmt.Fprintf(stdout, "%s  %s\n", time.Now().Format(time.TimeOnly), strings.TrimSpace(now))
		}
		last = now
		time.Sleep(waitEvery)
	}
}
