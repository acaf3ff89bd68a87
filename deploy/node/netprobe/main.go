// Command netprobe tries to reach each address it is given, from inside
// a pod, and prints one JSON line per attempt: what it tried and what it
// got. The node's network policy test (../netpol_test.go) runs it as a
// pod without crewd's labels (the hostile pod) and as an ephemeral
// container in a crewd pod, and reads the lines from the pod's log.
//
//	netprobe [-timeout 2s] tcp:10.244.0.7:4222 http://10.244.0.9:8080/v1/jobs ...
//
// tcp:HOST:PORT dials; once connected it reads what the server says first
// (a NATS server's INFO line) for at most the timeout. http://... sends a
// GET without credentials and reports the status and the challenge
// (WWW-Authenticate). An attempt ends "connected", "http", "refused"
// (the connection refused: a REJECT, or nothing listening), "timeout" (no
// answer within the timeout: a DROP) or "error" (anything else). It exits
// 0 when every line is printed, whatever they say: the test judges them.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

// Attempt is one line of output.
type Attempt struct {
	Target string  `json:"target"`
	Result string  `json:"result"` // connected, http, refused, timeout, error
	Answer string  `json:"answer"` // what came back: the first bytes, the status, the error
	Status int     `json:"status,omitempty"`
	Millis float64 `json:"ms"`
}

func main() {
	timeout := flag.Duration("timeout", 2*time.Second, "how long an attempt may take")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: netprobe [-timeout 2s] tcp:HOST:PORT | http://... ...")
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, target := range flag.Args() {
		if err := enc.Encode(try(target, *timeout)); err != nil {
			os.Exit(1)
		}
	}
}

func try(target string, timeout time.Duration) Attempt {
	t0 := time.Now()
	var a Attempt
	switch {
	case strings.HasPrefix(target, "tcp:"):
		a = dial(strings.TrimPrefix(target, "tcp:"), timeout)
	case strings.HasPrefix(target, "http://"):
		a = get(target, timeout)
	default:
		a = Attempt{Result: "error", Answer: "unknown target (tcp:HOST:PORT or http://...)"}
	}
	a.Target = target
	a.Millis = float64(time.Since(t0).Microseconds()) / 1000
	return a
}

func dial(addr string, timeout time.Duration) Attempt {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(conn).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "" && err != nil {
		return Attempt{Result: "connected", Answer: "connected; nothing said: " + err.Error()}
	}
	return Attempt{Result: "connected", Answer: "connected; first line: " + clip(line, 100)}
}

func get(url string, timeout time.Duration) Attempt {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Attempt{Result: "error", Answer: err.Error()}
	}
	resp, err := (&http.Transport{DisableKeepAlives: true}).RoundTrip(req)
	if err != nil {
		return failed(err)
	}
	resp.Body.Close()
	answer := "HTTP " + resp.Status
	if c := resp.Header.Get("WWW-Authenticate"); c != "" {
		answer += "; WWW-Authenticate: " + c
	}
	return Attempt{Result: "http", Answer: answer, Status: resp.StatusCode}
}

func failed(err error) Attempt {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Attempt{Result: "refused", Answer: err.Error()}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Attempt{Result: "timeout", Answer: err.Error()}
	}
	return Attempt{Result: "error", Answer: err.Error()}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
