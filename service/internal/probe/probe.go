// Package probe is `crewd probe`: a client of a running crewd that posts
// one job and waits until it has succeeded. The chart's `helm test` Pod
// runs it with crewd's own image (which has no shell and no curl) against
// the release's Service: a job accepted through the Service, stored, run
// by some replica and read back.
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/crew-go/crew/service/internal/auth"
)

// Exit codes: 0 the job succeeded, 1 it did not (refused, failed, or not
// within the timeout), 2 a usage error.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// Run is `crewd probe [-timeout D] [-job JSON] [-token-file F] URL`.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crewd probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", time.Minute, "how long the whole probe may take")
	job := fs.String("job", `{"kind":"sleep","duration":"100ms"}`, "the job to post (POST URL/v1/jobs)")
	tokenFile := fs.String("token-file", "", "a file whose first line is the API token to send (with jobs:submit and jobs:read); empty: $"+auth.TokenVar+", or none")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crewd probe [-timeout D] [-job JSON] [-token-file F] URL\n\nPosts a job to crewd at URL (e.g. http://crewd.crewd.svc) and waits until it has succeeded; exit 0 if it did, 1 if not.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() != 1 || *timeout <= 0 {
		fs.Usage()
		return ExitUsage
	}
	base := strings.TrimSuffix(fs.Arg(0), "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		fmt.Fprintf(stderr, "crewd probe: %q: want an http:// or https:// URL\n", base)
		return ExitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	token, err := auth.ClientToken(*tokenFile, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "crewd probe: -token-file: %v\n", err)
		return ExitUsage
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &auth.Transport{Token: token}}
	if err := probe(ctx, client, base, []byte(*job), stdout); err != nil {
		fmt.Fprintf(stderr, "crewd probe: %v\n", err)
		return ExitFail
	}
	return ExitOK
}

func probe(ctx context.Context, client *http.Client, base string, job []byte, out io.Writer) error {
	t0 := time.Now()
	var id string
	// The Service may have no ready endpoint for a moment: try again
	// until the deadline, on anything but a 4xx.
	for {
		var err error
		var permanent bool
		id, permanent, err = post(ctx, client, base+"/v1/jobs", job)
		if err == nil {
			break
		}
		if permanent || ctx.Err() != nil {
			return fmt.Errorf("POST %s/v1/jobs: %w", base, err)
		}
		if !wait(ctx, time.Second) {
			return fmt.Errorf("POST %s/v1/jobs: %w", base, err)
		}
	}
	fmt.Fprintf(out, "job %s accepted (202) by %s after %.1fs\n", id, base, time.Since(t0).Seconds())
	last := ""
	for {
		state, errText, err := get(ctx, client, base+"/v1/jobs/"+id)
		switch {
		case err != nil:
			last = err.Error()
		case state == "succeeded":
			fmt.Fprintf(out, "job %s succeeded after %.1fs\n", id, time.Since(t0).Seconds())
			return nil
		case state != "" && !pending[state]:
			// failed, timed_out, canceled, not_run: it ended otherwise.
			return fmt.Errorf("job %s ended %s: %s", id, state, errText)
		default:
			last = "state " + state
		}
		if !wait(ctx, 200*time.Millisecond) {
			return fmt.Errorf("job %s not succeeded in time (last: %s)", id, last)
		}
	}
}

// pending are the states of a job that has not ended (jobs.State).
var pending = map[string]bool{"scheduled": true, "queued": true, "running": true, "retrying": true}

func wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// post returns the job's id on a 202; permanent is true on a 4xx (the job
// itself was refused).
func post(ctx context.Context, client *http.Client, url string, job []byte) (id string, permanent bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(job))
	if err != nil {
		return "", true, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusAccepted {
		return "", resp.StatusCode >= 400 && resp.StatusCode < 500, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ID == "" {
		return "", true, fmt.Errorf("202 without a job id: %s", strings.TrimSpace(string(b)))
	}
	return r.ID, false, nil
}

func get(ctx context.Context, client *http.Client, url string) (state, errText string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("GET: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var r struct {
		State string `json:"state"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", "", err
	}
	return r.State, r.Error, nil
}
