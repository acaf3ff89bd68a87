package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crew-go/crew/service/internal/auth"
)

// Exit codes: 0 done, 1 refused or failed (the API's answer says why), 2
// a usage error.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// URLVar is the variable of crewd's API address, -url's default.
const URLVar = "CREW_URL"

const usage = `usage: crewd jobs list [-state S] [-kind K] [-queue Q] [-limit N] [-after CURSOR]
       crewd jobs get ID | wait ID | cancel ID | retry ID | delete ID | counts | ends [-minutes N]
       crewd jobs after ID PARENT... (a waiting job, a batch's callback, waits for these too)
       crewd queues [list] | pause NAME [-until RFC3339] | resume NAME
       crewd replicas
       crewd workflows get ID | cancel ID | retry ID
       crewd dash [-every 2s] [-once]
flags, anywhere: -url (crewd's API, $CREW_URL, default http://127.0.0.1:8080),
-token-file (a file whose first line is the token; default $CREW_API_TOKEN), -json (the API's answer as it is)`

// Run runs "crewd jobs ARGS" (what "jobs"), "crewd queues ARGS" (what
// "queues"), "crewd replicas" or "crewd dash ARGS" (what "dash") and
// returns the exit code.
func Run(what string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crewd "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage) }
	base := fs.String("url", "", "crewd's API (default $"+URLVar+", else http://127.0.0.1:8080)")
	tokenFile := fs.String("token-file", "", "a file whose first line is the API token; empty: $"+auth.TokenVar)
	asJSON := fs.Bool("json", false, "print the API's answer as it is")
	state := fs.String("state", "", "jobs list: only jobs in this state")
	kind := fs.String("kind", "", "jobs list: only jobs of this kind")
	queue := fs.String("queue", "", "jobs list: only jobs of this queue (default: the jobs that name none)")
	limit := fs.Int("limit", 0, "jobs list: at most this many (the API's default: 100)")
	after := fs.String("after", "", "jobs list: the page after this cursor (the last page's next)")
	until := fs.String("until", "", "queues pause: resume by itself then (RFC 3339)")
	minutes := fs.Int("minutes", 0, "jobs ends: the last this many minutes (the API's default: 60)")
	every := fs.Duration("every", 2*time.Second, "dash: how often the screen is drawn again")
	once := fs.Bool("once", false, "dash: draw the screen once and exit")
	// Flags before, between or after the verb and its arguments.
	var rest []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return ExitOK
		} else if err != nil {
			return ExitUsage
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		rest, args = append(rest, args[0]), args[1:]
	}
	if *base == "" {
		*base = getenv(URLVar)
	}
	if *base == "" {
		*base = "http://127.0.0.1:8080"
	}
	if u, err := url.Parse(*base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "crewd %s: -url %q: want http://host:port\n", what, *base)
		return ExitUsage
	}
	token, err := auth.ClientToken(*tokenFile, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "crewd %s: -token-file: %v\n", what, err)
		return ExitUsage
	}
	c := &client{base: strings.TrimSuffix(*base, "/"), http: &http.Client{Timeout: 30 * time.Second, Transport: &auth.Transport{Token: token}}}
	if what == "dash" {
		if len(rest) != 0 || *every < 100*time.Millisecond {
			fmt.Fprintln(stderr, usage)
			return ExitUsage
		}
		return c.dash(stdout, stderr, *every, *once)
	}
	verb := "list"
	if len(rest) > 0 {
		verb, rest = rest[0], rest[1:]
	}
	if what == "jobs" && verb == "wait" {
		if len(rest) != 1 || rest[0] == "" {
			fmt.Fprintln(stderr, usage)
			return ExitUsage
		}
		return c.wait(rest[0], stdout, stderr, *asJSON)
	}
	call, ok := c.calls(what, verb, rest, *state, *kind, *queue, *limit, *after, *until, *minutes)
	if !ok {
		fmt.Fprintln(stderr, usage)
		return ExitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, body, err := c.send(ctx, call.method, call.path, call.body)
	if err != nil {
		fmt.Fprintf(stderr, "crewd %s %s: %v\n", what, verb, err)
		return ExitFail
	}
	if status >= 300 {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		fmt.Fprintf(stderr, "crewd %s %s: %d %s: %s\n", what, verb, status, http.StatusText(status), cmpOr(e.Error, strings.TrimSpace(string(body))))
		return ExitFail
	}
	if *asJSON || call.print == nil {
		_, _ = stdout.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			fmt.Fprintln(stdout)
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if err := call.print(tw, body); err != nil {
		fmt.Fprintf(stderr, "crewd %s %s: the answer: %v\n", what, verb, err)
		return ExitFail
	}
	_ = tw.Flush()
	return ExitOK
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// call is one request of a verb, and how its answer is printed for a
// person (nil: as JSON).
type call struct {
	method, path string
	print        func(w io.Writer, body []byte) error
	body         []byte // JSON, or nil
}

func (c *client) calls(what, verb string, rest []string, state, kind, queue string, limit int, after, until string, minutes int) (call, bool) {
	one := func() (string, bool) {
		if len(rest) != 1 || rest[0] == "" {
			return "", false
		}
		return url.PathEscape(rest[0]), true
	}
	switch what + " " + verb {
	case "jobs list":
		if len(rest) != 0 {
			return call{}, false
		}
		q := url.Values{}
		for k, v := range map[string]string{"state": state, "kind": kind, "queue": queue, "after": after} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if limit > 0 {
			q.Set("limit", fmt.Sprint(limit))
		}
		path := "/v1/jobs"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		return call{"GET", path, printJobs, nil}, true
	case "jobs counts":
		return call{"GET", "/v1/jobs/counts", printCounts, nil}, len(rest) == 0
	case "jobs ends":
		path := "/v1/jobs/ends"
		if minutes != 0 {
			path += "?minutes=" + fmt.Sprint(minutes)
		}
		return call{"GET", path, printEnds, nil}, len(rest) == 0
	case "jobs get", "jobs cancel", "jobs retry", "jobs delete":
		id, ok := one()
		switch verb {
		case "get":
			return call{"GET", "/v1/jobs/" + id, printJob, nil}, ok
		case "cancel":
			return call{"DELETE", "/v1/jobs/" + id, printJob, nil}, ok
		case "delete":
			return call{"DELETE", "/v1/jobs/" + id + "/record", printDeleted, nil}, ok
		}
		return call{"POST", "/v1/jobs/" + id + "/retry", printJob, nil}, ok
	case "jobs after":
		if len(rest) < 2 || rest[0] == "" {
			return call{}, false
		}
		body, _ := json.Marshal(map[string][]string{"after": rest[1:]})
		return call{"POST", "/v1/jobs/" + url.PathEscape(rest[0]) + "/after", printJob, body}, true
	case "workflows get", "workflows cancel", "workflows retry":
		id, ok := one()
		if verb != "get" {
			return call{"POST", "/v1/workflows/" + id + "/" + verb, printWorkflow, nil}, ok
		}
		return call{"GET", "/v1/workflows/" + id, printWorkflow, nil}, ok
	case "replicas list":
		return call{"GET", "/v1/replicas", printReplicas, nil}, len(rest) == 0
	case "queues list":
		return call{"GET", "/v1/queues", printQueues, nil}, len(rest) == 0
	case "queues pause", "queues resume":
		name, ok := one()
		path := "/v1/queues/" + name + "/" + verb
		if verb == "pause" && until != "" {
			if _, err := time.Parse(time.RFC3339, until); err != nil {
				return call{}, false
			}
			path += "?" + url.Values{"until": {until}}.Encode()
		}
		return call{"POST", path, nil, nil}, ok
	}
	return call{}, false
}

type client struct {
	base string
	http *http.Client
}

// do sends one request without a body and reads its answer.
func (c *client) do(ctx context.Context, method, path string) (int, []byte, error) {
	return c.send(ctx, method, path, nil)
}

// send sends one request, with body if not nil, and reads its answer, at
// most 16 MiB.
func (c *client) send(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, answer, err
}

// Main is Run with the process's environment.
func Main(what string, args []string) int { return Run(what, args, os.Getenv, os.Stdout, os.Stderr) }
