package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts a headless chromium for the test (Debian's, installed by
// .ci/install), or skips the test where there is none.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no chromium: .ci/install installs Debian's")
		}
		t.Skip("no chromium on this machine (apt-get install chromium): not run")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTime()
		cancel()
		cancelAlloc()
	})
	return ctx
}

// TestUIInABrowser: in a real browser, the UI of a crewd that asks for
// tokens sends a visitor to its login, takes a token there, shows the jobs
// by state and the job a client submitted, and cancels it on a click; a
// form another site's page posts to it (with the session cookie the
// browser holds) is refused and changes nothing.
func TestUIInABrowser(t *testing.T) {
	ctx := browser(t)
	file := filepath.Join(t.TempDir(), "tokens")
	out, err := exec.Command(binary, "token", "new", "-name", "operator", "-scopes", "jobs:read,jobs:submit,jobs:admin", "-file", file).Output()
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(out))
	c := start(t, "-api-tokens", file)
	base := strings.Replace(c.http, "127.0.0.1", "localhost", 1)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
	); err != nil {
		t.Fatalf("the UI: %v", err)
	}
	loginURL, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#counts")),
	); err != nil {
		where, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Location())
		t.Fatalf("login: %v (at %s)", err, where)
	}
	if !strings.Contains(loginURL, "/ui/login?next=") {
		t.Fatalf("a visitor without a session was sent to %s, not the login", loginURL)
	}

	// call is a request to crewd's API with the token: its status, body
	// and Location.
	call := func(method, path, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, c.http+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, readAll(resp), resp.Header.Get("Location")
	}
	const longJob = `{"kind":"sleep","duration":"60s","timeout":"90s"}`
	code, _, loc := call("POST", "/v1/jobs", longJob)
	id := strings.TrimPrefix(loc, "/v1/jobs/")
	if code != 202 || id == "" {
		t.Fatalf("a job: %d", code)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, body, _ := call("GET", "/v1/jobs/"+id, "")
		if strings.Contains(body, `"state":"running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not running in 10 s: %s", id, body)
		}
	}

	// The overview names this replica running the job, and the store's
	// parts with their leader (one server: no followers).
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#replicas a[href="/ui/jobs/%s"]`, id)))); err != nil {
		replicas, _ := liveText(context.WithoutCancel(ctx), "#replicas")
		t.Fatalf("the overview's replicas do not name the running job %s: %v\n%s", id, err, replicas)
	}
	for sel, want := range map[string]string{"#replicas": "sleep", "#groups": "none (one server)", "#store": "answering"} {
		if got, err := liveText(ctx, sel); err != nil || !strings.Contains(got, want) {
			t.Errorf("the overview's %s reads %q (%v), want %q in it", sel, got, err, want)
		}
	}
	// The API and the CLI say as much.
	if code, body, _ := call("GET", "/v1/replicas", ""); code != 200 || !strings.Contains(body, `"id":"`+id+`"`) || !strings.Contains(body, `"leader":"`) {
		t.Errorf("GET /v1/replicas: %d %s", code, body)
	}
	cli := exec.Command(binary, "replicas", "-url", c.http)
	cli.Env = append(os.Environ(), "CREW_API_TOKEN="+token)
	if out, err := cli.CombinedOutput(); err != nil || !strings.Contains(string(out), id+" sleep") || !strings.Contains(string(out), "none (one server)") {
		t.Errorf("crewd replicas: %v\n%s", err, out)
	}

	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/jobs"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-id="%s"] a`, id))),
		chromedp.WaitVisible(chromedp.CSS("#cancel")),
	); err != nil {
		t.Fatalf("the job's page: %v", err)
	}
	record, err := liveText(ctx, "#record")
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#cancel")),
		chromedp.WaitNotPresent(chromedp.CSS("#cancel")),
	); err != nil {
		t.Fatalf("the cancel: %v", err)
	}
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#state")))
	if err != nil {
		t.Fatal(err)
	}
	if state != "canceled" || !strings.Contains(record, `"submitter": "operator"`) {
		t.Fatalf("after the click the job reads %q; its record %s", state, record)
	}

	// Live pages: the overview's counts follow a job that ends, and the
	// jobs page shows a new job, without a reload (a mark left on the
	// window stays) and with a box ticked before still ticked.
	const quickJob = `{"kind":"factorial","n":5}`
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#counts"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.crewStay = 7")); err != nil {
		t.Fatal(err)
	}
	succeeded := func() string {
		v, err := liveText(ctx, `#counts td[data-state="succeeded"]`)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := succeeded()
	call("POST", "/v1/jobs", quickJob)
	for deadline := time.Now().Add(10 * time.Second); succeeded() == before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the overview still reads %s succeeded 10 s after a job ended: not live", before)
		}
	}
	if stay, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.crewStay || 0")); err != nil || stay != 7 {
		t.Fatalf("the overview reloaded itself (%d, %v): it should update in place", stay, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/jobs"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-id="%s"] input`, id))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-id="%s"] input`, id))),
	); err != nil {
		t.Fatalf("ticking a job: %v", err)
	}
	_, _, loc = call("POST", "/v1/jobs", quickJob)
	fresh := strings.TrimPrefix(loc, "/v1/jobs/")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-id="%s"]`, fresh)))); err != nil {
		t.Fatalf("a new job not shown on the jobs page by itself: %v", err)
	}
	ticked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector('tr[data-id="%s"] input').checked`, id)))
	if err != nil || !ticked {
		t.Fatalf("the box ticked before the update: %v, %v; want it kept", ticked, err)
	}
	screenshot(t, ctx, "", "jobs")

	// Two jobs selected on the jobs page, canceled in one action after a
	// confirmation that counts them.
	var selected []string
	for range 2 {
		_, _, loc := call("POST", "/v1/jobs", longJob)
		selected = append(selected, strings.TrimPrefix(loc, "/v1/jobs/"))
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/jobs"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[value="%s"]`, selected[0]))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[value="%s"]`, selected[1]))),
		chromedp.Click(chromedp.CSS("#bulk-cancel")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
	); err != nil {
		t.Fatalf("a bulk cancel: %v", err)
	}
	screenshot(t, ctx, "", "confirm")
	confirm, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#confirm")))
	if err != nil || confirm != "Cancel 2 jobs" {
		t.Fatalf("the confirmation reads %q (%v)", confirm, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#jobs"))); err != nil {
		t.Fatalf("the confirmed bulk cancel: %v", err)
	}
	for _, id := range selected {
		if _, body, _ := call("GET", "/v1/jobs/"+id, ""); !strings.Contains(body, `"state":"canceled"`) {
			t.Fatalf("job %s after the bulk cancel: %s", id, body)
		}
	}

	// An ended job's page shows its timeline, ending in its cancel, and
	// Delete removes it: gone from the API and from the jobs page.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/jobs/"+selected[0]),
		chromedp.WaitVisible(chromedp.CSS("#timeline")),
	); err != nil {
		t.Fatalf("a canceled job's page: %v", err)
	}
	screenshot(t, ctx, "", "job")
	if timeline, err := liveText(ctx, "#timeline"); err != nil || !strings.Contains(timeline, "submitted by operator") || !strings.Contains(timeline, "canceled while") {
		t.Fatalf("the timeline reads %q (%v)", timeline, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#delete")), chromedp.WaitVisible(chromedp.CSS("#jobs"))); err != nil {
		t.Fatalf("the delete: %v", err)
	}
	if code, body, _ := call("GET", "/v1/jobs/"+selected[0], ""); code != 404 {
		t.Fatalf("a deleted job reads %d %s", code, body)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('tr[data-id="%s"]').length`, selected[0]))); err != nil || n != 0 {
		t.Fatalf("a deleted job still on the jobs page (%d, %v)", n, err)
	}

	// A job that timed out is a group on the failures page, run again by
	// its "Retry all"; a search by its id finds it alone.
	code, _, loc = call("POST", "/v1/jobs", `{"kind":"sleep","duration":"5s","timeout":"10ms","max_attempts":1}`)
	failed := strings.TrimPrefix(loc, "/v1/jobs/")
	if code != 202 {
		t.Fatalf("a job to time out: %d", code)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, body, _ := call("GET", "/v1/jobs/"+failed, ""); strings.Contains(body, `"state":"timed_out"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not time out in 10 s", failed)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#counts"))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "", "overview")
	// The overview's chart counts the job that timed out, and the
	// canceled ones, in the hour (from the store's index).
	sum, err := liveText(ctx, "#ends-sum")
	if err != nil {
		t.Fatalf("the overview's chart: %v", err)
	}
	if m := regexp.MustCompile(`(\d+) failed or timed out, (\d+) canceled`).FindStringSubmatch(sum); m == nil || m[1] == "0" || m[2] == "0" {
		t.Fatalf("the overview's chart says %q: want the job timed out and those canceled", sum)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/failures"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-kind="sleep"] .retry-group`)),
	); err != nil {
		t.Fatalf("the failures page: %v", err)
	}
	screenshot(t, ctx, "", "failures")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-kind="sleep"] .retry-group`))); err != nil {
		t.Fatalf("retry all: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, body, _ := call("GET", "/v1/jobs/"+failed, "")
		if strings.Contains(body, `"retries":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after retry all, the job reads %s", body)
		}
	}
	// A live page's refresh in flight aborts a navigation now and then
	// (net::ERR_ABORTED): the page is asked for again.
	for try := 0; ; try++ {
		err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/jobs"))
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "ERR_ABORTED") || try == 2 {
			t.Fatalf("the jobs page: %v", err)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#q"), failed),
		chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-id="%s"]`, failed))),
	); err != nil {
		t.Fatalf("a search by id: %v", err)
	}
	// The row may be found on the page before the search's answer has
	// replaced it: read until the searched page is the one shown.
	rows, where := 0, ""
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		where, _ = chromedp.Run(ctx, chromedp.Location())
		if rows, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("tr[data-id]").length`)); err == nil && rows == 1 && strings.Contains(where, "q="+failed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a search by id shows %d jobs at %s (%v), want 1", rows, where, err)
		}
	}
	screenshot(t, ctx, "", "search")

	// A periodic job set through the API is on its page, with its ticks'
	// jobs, and deleted by a click.
	if code, body, _ := call("PUT", "/v1/periodic/nightly", `{"every":"@every 1s","kind":"sleep","duration":"1ms"}`); code != 200 {
		t.Fatalf("a periodic job: %d %s", code, body)
	}
	// It ticks: its page names its last tick and the jobs of its latest
	// ticks, succeeded (the page read again until then).
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		if err := chromedp.Do(ctx,
			chromedp.Navigate(base+"/ui/periodic"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-name="nightly"]`)),
		); err != nil {
			t.Fatalf("the periodic jobs' page: %v", err)
		}
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr[data-name="nightly"] .ticks a[data-state="succeeded"]').length`))
		if err == nil && n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			row, _ := liveText(ctx, `tr[data-name="nightly"]`)
			t.Fatalf("15 s after a periodic job every second was set, its row reads %q (%v)", row, err)
		}
	}
	screenshot(t, ctx, "", "periodic")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`tr[data-name="nightly"] button`)),
		chromedp.WaitNotPresent(chromedp.CSS(`tr[data-name="nightly"]`)),
	); err != nil {
		t.Fatalf("the periodic job's page and its delete: %v", err)
	}

	// A workflow posted through the API: its page draws its steps, each
	// read succeeded once they have run (the page live), and a step's box
	// links to its job.
	code, posted, _ := call("POST", "/v1/workflows", `{"steps":[{"name":"fetch","job":{"kind":"sleep","duration":"300ms"}},`+
		`{"name":"resize","after":["fetch"],"job":{"kind":"factorial","n":5}},{"name":"album","after":["fetch","resize"],"job":{"kind":"factorial","n":3}}]}`)
	if code != 202 {
		t.Fatalf("a workflow: %d %s", code, posted)
	}
	var wf struct{ ID string }
	if err := json.Unmarshal([]byte(posted), &wf); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/workflows/"+wf.ID), chromedp.WaitVisible(chromedp.CSS(`#graph g[data-step="album"]`))); err != nil {
		t.Fatalf("the workflow's page: %v", err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#graph g[data-state="succeeded"]').length`))
		if err == nil && n == 3 {
			break
		}
		if time.Now().After(deadline) {
			head, _ := liveText(ctx, `#workflow-head`)
			t.Fatalf("15 s after a workflow of three short steps was posted, its page draws %d succeeded (%v): %q", n, err, head)
		}
	}
	screenshot(t, ctx, "", "workflow")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#graph g[data-step="album"] rect`)), chromedp.WaitVisible(chromedp.CSS("#after"))); err != nil {
		t.Fatalf("a step's box clicked: %v", err)
	}

	// Another site's page (another port is another origin) posts a pause
	// of the default queue to the UI, the browser sending the session.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form id="f" method="post" action="%s/ui/queues/default/pause"><input name="back" value="/ui/"></form><script>document.getElementById("f").submit()</script>`, base)
	}))
	defer evil.Close()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)),
		chromedp.WaitVisible(chromedp.CSS("#message")),
	); err != nil {
		t.Fatalf("another site's form: %v", err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#message")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "refused") {
		t.Fatalf("another site's form was answered %q", body)
	}
	if _, qs, _ := call("GET", "/v1/queues", ""); strings.Contains(qs, `"paused":true`) {
		t.Fatalf("another site's form paused the queue: %s", qs)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.log {
		if strings.Contains(fmt.Sprint(m), token) {
			t.Fatalf("a log line holds the token: %v", m)
		}
	}
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// screenshot saves the page (at url, or the current one) as NAME.png (a
// quality of 100 is PNG; below, JPEG) in
// $UI_SCREENSHOTS, when set: the pages as a person sees them, to look at.
func screenshot(t *testing.T, ctx context.Context, url, name string) {
	t.Helper()
	dir := os.Getenv("UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	if url != "" {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// liveText is the text of the element sel on a live page, read by the
// page's own script: a live page replaces its parts every 2 s, and a node
// chromedp tracks may be gone by the time it reads it.
func liveText(ctx context.Context, sel string) (string, error) {
	for range 50 {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[*string](fmt.Sprintf(`(function(){ var e = document.querySelector(%q); return e ? e.textContent : null; })()`, sel)))
		if err != nil {
			return "", err
		}
		if v != nil {
			return *v, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("no %s on the page", sel)
}
