package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs"
	"github.com/crew-go/crew/jobs/memjobs"
	"github.com/crew-go/crew/service/internal/auth"
	"github.com/crew-go/crew/service/internal/kinds"
	"github.com/crew-go/crew/service/internal/ui"
)

func newUI(t *testing.T) (http.Handler, map[string]string, jobs.Runner) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens")
	tokens := map[string]string{}
	var lines []string
	for name, scopes := range map[string]string{"reader": "jobs:read", "ops": "jobs:read,jobs:admin"} {
		tok, line, err := auth.New(name, scopes)
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = tok
		lines = append(lines, line)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := auth.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := crew.New(crew.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: kinds.New(), DefaultTimeout: time.Minute, MaxTimeout: time.Minute}
	return (&ui.UI{Jobs: r, Auth: f}).Handler(), tokens, r
}

func do(h http.Handler, method, target string, form url.Values, cookie string, header map[string]string) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, "http://localhost:8080"+target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "crewd_session", Value: cookie})
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// TestUIAsksAndRefuses: no session goes to the login; a wrong token there
// is refused; a login goes back only to a page of the UI; a reader sees
// pages but no action and may not post one; an action without the
// session's CSRF token, or from another origin, is refused; with both, by
// an operator, it is done. The cookie is HttpOnly and SameSite=Strict.
func TestUIAsksAndRefuses(t *testing.T) {
	h, tokens, r := newUI(t)
	rec, err := r.Submit(context.Background(), jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"50s"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if w := do(h, "GET", "/ui/jobs", nil, "", nil); w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/ui/login?next=") {
		t.Fatalf("no session: %d to %q", w.Code, w.Header().Get("Location"))
	}
	if w := do(h, "POST", "/ui/login", url.Values{"token": {"crew_wrong"}}, "", nil); w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 {
		t.Fatalf("a wrong token: %d, cookies %v", w.Code, w.Result().Cookies())
	}
	for next, want := range map[string]string{"/ui/jobs?state=failed": "/ui/jobs?state=failed", "//evil.example/ui/": "/ui/", "https://evil.example/": "/ui/", "/ui//evil.example": "/ui/"} {
		w := do(h, "POST", "/ui/login", url.Values{"token": {tokens["ops"]}, "next": {next}}, "", nil)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != want {
			t.Errorf("login with next %q: %d to %q, want %q", next, w.Code, w.Header().Get("Location"), want)
		}
		c := w.Result().Cookies()
		if len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/ui/" {
			t.Fatalf("the session cookie: %+v", c)
		}
	}
	page := do(h, "GET", "/ui/jobs/"+rec.ID, nil, tokens["reader"], nil)
	if page.Code != 200 || strings.Contains(page.Body.String(), `id="cancel"`) {
		t.Fatalf("a reader's job page: %d, cancel shown: %v", page.Code, strings.Contains(page.Body.String(), `id="cancel"`))
	}
	for _, want := range []string{`id="timeline"`, `<td>submitted</td>`, `priority <span id="priority">2</span>`} {
		if !strings.Contains(page.Body.String(), want) {
			t.Fatalf("a job page without %s:\n%s", want, page.Body.String())
		}
	}
	readerCSRF := csrfField.FindStringSubmatch(do(h, "GET", "/ui/", nil, tokens["reader"], nil).Body.String())
	page = do(h, "GET", "/ui/jobs/"+rec.ID, nil, tokens["ops"], nil)
	m := csrfField.FindStringSubmatch(page.Body.String())
	if page.Code != 200 || m == nil {
		t.Fatalf("an operator's job page: %d, no CSRF field", page.Code)
	}
	cancel := "/ui/jobs/" + rec.ID + "/cancel"
	for name, tc := range map[string]struct {
		form   url.Values
		cookie string
		header map[string]string
		want   int
	}{
		"no CSRF token":         {url.Values{}, tokens["ops"], nil, 403},
		"a reader's CSRF token": {url.Values{"csrf": {first(readerCSRF)}}, tokens["ops"], nil, 403},
		"another origin":        {url.Values{"csrf": {m[1]}}, tokens["ops"], map[string]string{"Origin": "https://evil.example"}, 403},
		"another site":          {url.Values{"csrf": {m[1]}}, tokens["ops"], map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		"a reader":              {url.Values{"csrf": {first(readerCSRF)}}, tokens["reader"], nil, 403},
		"no session":            {url.Values{"csrf": {m[1]}}, "", nil, 401},
	} {
		if w := do(h, "POST", cancel, tc.form, tc.cookie, tc.header); w.Code != tc.want {
			t.Errorf("cancel with %s: %d, want %d", name, w.Code, tc.want)
		}
	}
	if got, _ := r.Get(context.Background(), rec.ID); got.State.Terminal() {
		t.Fatalf("a refused cancel canceled the job: %+v", got)
	}
	w := do(h, "POST", cancel, url.Values{"csrf": {m[1]}, "back": {"/ui/jobs/" + rec.ID}}, tokens["ops"], map[string]string{"Origin": "http://localhost:8080"})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("an operator's cancel: %d %s", w.Code, w.Body)
	}
	if got, _ := r.Get(context.Background(), rec.ID); got.State != jobs.Canceled {
		t.Fatalf("after the operator's cancel the job reads %s", got.State)
	}
}

func first(m []string) string {
	if len(m) < 2 {
		return ""
	}
	return m[1]
}

// TestFailuresGroupedAndRetried: jobs that timed out are one group per
// kind and error on the failures page, with their count; an operator's
// "retry all" runs every job of the group again, and no other.
func TestFailuresGroupedAndRetried(t *testing.T) {
	h, tokens, r := newUI(t)
	ctx := context.Background()
	var ids []string
	for range 3 {
		rec, err := r.Submit(ctx, jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"5s"}`), Timeout: jobs.Duration(time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	ok, err := r.Submit(ctx, jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"1ms"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		done := 0
		for _, id := range append(ids, ok.ID) {
			if rec, _ := r.Get(ctx, id); rec.State.Terminal() {
				done++
			}
		}
		if done == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the jobs did not end in 10 s")
		}
	}
	page := do(h, "GET", "/ui/failures", nil, tokens["ops"], nil)
	body := page.Body.String()
	if page.Code != 200 || !strings.Contains(body, `<td class="num">3</td>`) || !strings.Contains(body, "Retry all 3") {
		t.Fatalf("the failures page: %d\n%s", page.Code, body)
	}
	csrf := csrfField.FindStringSubmatch(body)
	rec, _ := r.Get(ctx, ids[0])
	form := url.Values{"csrf": {first(csrf)}, "state": {string(rec.State)}, "kind": {"sleep"}, "error": {rec.Error}, "back": {"/ui/failures"}}
	if w := do(h, "POST", "/ui/failures/retry", form, tokens["ops"], nil); w.Code != http.StatusSeeOther {
		t.Fatalf("retry all: %d %s", w.Code, w.Body)
	}
	for _, id := range ids {
		if rec, _ := r.Get(ctx, id); rec.Retries != 1 {
			t.Errorf("job %s of the group: %d retries, want 1", id, rec.Retries)
		}
	}
	if rec, _ := r.Get(ctx, ok.ID); rec.Retries != 0 || rec.State != jobs.Succeeded {
		t.Errorf("a job outside the group: %+v", rec)
	}
}

// TestBulkCancelAsksThenActs: jobs selected on the jobs page are canceled
// in one action, after a page that says how many and asks to confirm;
// nothing happens before the confirmation, a job not selected stays.
func TestBulkCancelAsksThenActs(t *testing.T) {
	h, tokens, r := newUI(t)
	ctx := context.Background()
	var ids []string
	for range 4 {
		rec, err := r.Submit(ctx, jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"50s"}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	page := do(h, "GET", "/ui/jobs", nil, tokens["ops"], nil)
	csrf := first(csrfField.FindStringSubmatch(page.Body.String()))
	if !strings.Contains(page.Body.String(), `type="checkbox" name="id" value="`+ids[0]) {
		t.Fatalf("the jobs page has no selection for an operator:\n%s", page.Body)
	}
	form := url.Values{"csrf": {csrf}, "action": {"cancel"}, "id": ids[:3], "back": {"/ui/jobs"}}
	ask := do(h, "POST", "/ui/jobs/bulk", form, tokens["ops"], nil)
	if ask.Code != 200 || !strings.Contains(ask.Body.String(), "Cancel 3 jobs?") {
		t.Fatalf("the confirmation: %d\n%s", ask.Code, ask.Body)
	}
	for _, id := range ids {
		if rec, _ := r.Get(ctx, id); rec.State.Terminal() {
			t.Fatalf("job %s ended before the confirmation", id)
		}
	}
	form.Set("confirm", "yes")
	if w := do(h, "POST", "/ui/jobs/bulk", form, tokens["ops"], nil); w.Code != http.StatusSeeOther {
		t.Fatalf("confirmed: %d %s", w.Code, w.Body)
	}
	for i, id := range ids {
		rec, _ := r.Get(ctx, id)
		if canceled := rec.State == jobs.Canceled; canceled != (i < 3) {
			t.Errorf("job %d (%s): %s after a bulk cancel of the first three", i, id, rec.State)
		}
	}
	form.Set("csrf", "")
	if w := do(h, "POST", "/ui/jobs/bulk", form, tokens["ops"], nil); w.Code != http.StatusForbidden {
		t.Fatalf("a bulk action without the CSRF token: %d", w.Code)
	}
}

// TestJobsSearchedByText: the jobs page's text filter finds a job by its
// id and jobs by their error, and the queue filter keeps a queue's jobs.
func TestJobsSearchedByText(t *testing.T) {
	h, tokens, r := newUI(t)
	ctx := context.Background()
	slow, err := r.Submit(ctx, jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"5s"}`), Timeout: jobs.Duration(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	quick, err := r.Submit(ctx, jobs.Spec{Kind: "sleep", Args: []byte(`{"duration":"1ms"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var timedOut jobs.Record
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		timedOut, _ = r.Get(ctx, slow.ID)
		if q, _ := r.Get(ctx, quick.ID); timedOut.State.Terminal() && q.State.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the jobs did not end in 10 s")
		}
	}
	rows := func(query string) []string {
		body := do(h, "GET", "/ui/jobs?"+query, nil, tokens["reader"], nil).Body.String()
		var ids []string
		for _, m := range regexp.MustCompile(`<tr data-id="([0-9a-f]+)"`).FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	for query, want := range map[string][]string{
		"q=" + quick.ID[:10]:                        {quick.ID},
		"q=" + url.QueryEscape(timedOut.Error[:12]): {slow.ID},
		"queue=default&q=" + slow.ID:                {slow.ID},
		"queue=email":                               nil,
	} {
		if got := rows(query); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("/ui/jobs?%s: %v, want %v", query, got, want)
		}
	}
	// A bad filter gets the store's 400 text on the page.
	for query, want := range map[string]string{"state=lost": `&#34;state&#34; &#34;lost&#34;: want one of`, "queue=a.b": `&#34;queue&#34; &#34;a.b&#34;: want 1 to 64 letters`} {
		if w := do(h, "GET", "/ui/jobs?"+query, nil, tokens["reader"], nil); w.Code != 400 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("/ui/jobs?%s: %d %s, want 400 with %s", query, w.Code, w.Body.String(), want)
		}
	}
}
