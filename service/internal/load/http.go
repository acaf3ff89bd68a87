package load

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
)

// post sends body to url as JSON and reads the answer.
func post(ctx context.Context, c *http.Client, url, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(c, req, "Post")
}

func get(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	return do(c, req, "Get")
}

// do sends req and reads the answer, at most 64 KB of it.
func do(c *http.Client, req *http.Request, verb string) (int, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return 0, nil, errors.New(strings.TrimPrefix(err.Error(), verb+" \""+req.URL.String()+"\": "))
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, b, err
}
