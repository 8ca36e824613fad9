// Package browser drives the operator dashboard (dashboard/README.md) in a real, headless
// Chromium against the stack of `make run` — `temco dev` with one local cluster (and its
// GitOps cluster) — as an operator would: clicking links and buttons, using the keyboard,
// and reading what the page shows, with the REST API as the independent witness.
//
// The browser is driven with github.com/chromedp/chromedp: a maintained, pure-Go client of
// the Chrome DevTools Protocol from the Go module proxy. It needs no Node.js toolchain,
// no WebDriver server and no browser download (it runs Debian's chromium, which `make
// test` installs when /usr/bin/chromium is missing), so the tests stay `go test` tests.
//
// Screenshots of every view go to tests/browser/artifacts (or $TEMCO_BROWSER_ARTIFACTS)
// as <TestName>-<view>.png and stay after the run; when a test fails the stack's logs are
// copied there too.
package browser

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/chromium"
)

// provider is the cluster provider TestMain registers the dev cluster under.
const provider = "local"

var (
	dashURL      string // the page, ".../dashboard/"
	apiURL       string // ".../v2"
	artifactsDir string
	browserCtx   context.Context // the shared browser; each test opens its own tab
	devCluster   struct{ name, kubeconfig string }
	// What a test starting a temco of its own against the stack needs (auth_test.go):
	// the binary, the stack's data directory and temco dev's summary.
	temcoBin, devData string
	devSummary        []string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("browser: skipped in -short mode")
		os.Exit(0)
	}
	code, err := runSuite(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runSuite(m *testing.M) (code int, err error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(chromium.Path()); err != nil {
		return 0, fmt.Errorf("no browser at %s (`make chromium` installs Debian's): %w", chromium.Path(), err)
	}
	artifactsDir = os.Getenv("TEMCO_BROWSER_ARTIFACTS")
	if artifactsDir == "" {
		artifactsDir = filepath.Join(root, "tests", "browser", "artifacts")
	}
	if artifactsDir, err = filepath.Abs(artifactsDir); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(artifactsDir, 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp("", "temco-browser-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	self := filepath.Join(tmp, "temco")
	build := exec.Command("go", "build", "-o", self, "./cmd/temco")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("build temco: %w", err)
	}

	// A second try, on other ports, when the first fails: on a shared machine another
	// process may take one of the free ports before the stack binds it.
	var dev *devStack
	for try := 1; ; try++ {
		dir := filepath.Join(tmp, "stack"+strconv.Itoa(try))
		if dev, err = startDev(self, filepath.Join(root, ".bin"), dir); err == nil {
			break
		}
		if dev != nil {
			_ = dev.stop()
			dev.keepLogs("stack-logs-" + strconv.Itoa(try))
		}
		if try == 2 {
			return 0, err
		}
		fmt.Fprintf(os.Stderr, "browser: %v\nbrowser: starting the stack again on other ports\n", err)
	}
	defer func() {
		stopErr := dev.stop()
		if stopErr != nil {
			fmt.Fprintln(os.Stderr, "browser:", stopErr)
		}
		if code != 0 || err != nil || stopErr != nil {
			dev.keepLogs("stack-logs")
		}
	}()
	if err := registerDevCluster(); err != nil {
		return 0, err
	}

	var stopBrowser func()
	if browserCtx, stopBrowser, err = startBrowser(tmp); err != nil {
		return 0, err
	}
	defer stopBrowser()
	return m.Run(), nil
}

// devStack is a running `temco dev`.
type devStack struct {
	cmd    *exec.Cmd
	data   string
	log    string // its stdout and stderr
	copied sync.WaitGroup
}

// startDev starts `temco dev --clusters 1` on free ports, its data and output in dir,
// and waits for its summary.
func startDev(self, bin, dir string) (*devStack, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"dev", "--bin", bin, "--data", filepath.Join(dir, "data"), "--clusters", "1"}
	for _, flag := range []string{"--api-port", "--temporal-port", "--ui-port", "--mongo-port", "--metrics-port"} {
		p, err := devstack.FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, flag, strconv.Itoa(p))
	}
	base, err := devstack.FreeClusterBase(2) // the cluster, then the GitOps cluster
	if err != nil {
		return nil, err
	}
	args = append(args, "--cluster-base-port", strconv.Itoa(base))
	d := &devStack{cmd: exec.Command(self, args...), data: filepath.Join(dir, "data"), log: filepath.Join(dir, "temco-dev.log")}
	// Clusters probed every 2 s (the cluster view's reachability), inherited by the api.
	d.cmd.Env = append(os.Environ(), "TEMCO_CLUSTER_PROBE_INTERVAL=2s")
	logf, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	d.cmd.Stderr = logf
	start := time.Now()
	fmt.Println("browser: temco", strings.Join(args, " "))
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	// Every line goes to the log; the summary's lines also to the channel until it ends.
	lines := make(chan string, 100)
	d.copied.Add(1)
	go func() {
		defer d.copied.Done()
		defer logf.Close()
		sc := bufio.NewScanner(out)
		summary := true
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if summary {
				lines <- sc.Text()
				summary = !strings.HasPrefix(sc.Text(), "Stop with Ctrl-C")
			}
		}
		if summary {
			close(lines)
		}
	}()
	var summary []string
	timeout := time.After(6 * time.Minute) // the stack builds its clusters: slow on a loaded machine
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				return d, fmt.Errorf("temco dev ended before it was ready:\n%s\n%s", strings.Join(summary, "\n"), tail(d.log, 4000))
			}
			summary = append(summary, l)
			ready = strings.HasPrefix(l, "Stop with Ctrl-C")
		case <-timeout:
			return d, fmt.Errorf("temco dev not ready within 6 minutes:\n%s", strings.Join(summary, "\n"))
		}
	}
	fmt.Printf("browser: stack up in %s\n%s\n", time.Since(start).Round(time.Millisecond), strings.Join(summary, "\n"))
	temcoBin, devData, devSummary = self, d.data, summary
	if err := d.parseSummary(summary, args); err != nil {
		return d, err
	}
	return d, waitAPI()
}

var (
	dashboardLine = regexp.MustCompile(`^\s*dashboard\s+(http\S+)$`)
	restLine      = regexp.MustCompile(`^\s*REST API\s+(http\S+/v2)$`)
	clusterLine   = regexp.MustCompile(`^\s*cluster (\S+)\s+https://\S+\s+kubeconfig (\S+)$`)
)

// parseSummary reads the page's and the API's addresses and the cluster's kubeconfig.
func (d *devStack) parseSummary(summary, args []string) error {
	for _, l := range summary {
		if m := dashboardLine.FindStringSubmatch(l); m != nil {
			dashURL = m[1]
		}
		if m := restLine.FindStringSubmatch(l); m != nil {
			apiURL = m[1]
		}
		if m := clusterLine.FindStringSubmatch(l); m != nil && devCluster.name == "" {
			devCluster.name, devCluster.kubeconfig = m[1], m[2]
		}
	}
	if apiURL == "" { // an older summary: the port we chose
		for i, a := range args {
			if a == "--api-port" {
				apiURL = "http://127.0.0.1:" + args[i+1] + "/v2"
			}
		}
	}
	if dashURL == "" {
		fmt.Println("browser: the summary has no dashboard line; using the API's address")
		dashURL = strings.TrimSuffix(apiURL, "/v2") + "/dashboard/"
	}
	if devCluster.name == "" {
		return fmt.Errorf("the summary names no cluster with its kubeconfig:\n%s", strings.Join(summary, "\n"))
	}
	return nil
}

// waitAPI waits until the REST API answers.
func waitAPI() error {
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(apiURL + "/projects")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		<-time.After(250 * time.Millisecond)
	}
	return fmt.Errorf("the REST API at %s does not answer: %s", apiURL, last)
}

// stop ends `temco dev` as Ctrl-C does, killing it after a minute.
func (d *devStack) stop() error {
	if d.cmd.Process == nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		d.copied.Wait()
		if err != nil {
			return fmt.Errorf("temco dev after SIGINT: %w", err)
		}
		return nil
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill()
		return errors.New("temco dev did not stop within a minute of SIGINT: killed")
	}
}

// keepLogs copies the stack's logs and temco dev's output into the artifacts.
func (d *devStack) keepLogs(name string) {
	dst := filepath.Join(artifactsDir, name)
	_ = os.RemoveAll(dst)
	if err := exec.Command("cp", "-r", filepath.Join(d.data, "logs"), dst).Run(); err != nil {
		fmt.Fprintln(os.Stderr, "browser: copy the stack's logs:", err)
		_ = os.MkdirAll(dst, 0o755)
	}
	_ = exec.Command("cp", d.log, filepath.Join(dst, "temco-dev.log")).Run()
	fmt.Printf("browser: the stack's logs are kept in %s\n", dst)
}

// tail is the end of a file, for error messages.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// startBrowser starts one headless Chromium for the whole run. The flags keep it off the
// network (the machine has none: its own connections would be refused and retried).
func startBrowser(tmp string) (context.Context, func(), error) {
	profile := filepath.Join(tmp, "chromium-profile")
	logf, err := os.Create(filepath.Join(tmp, "chromium.log"))
	if err != nil {
		return nil, nil, err
	}
	// A name of another site that resolves to the api's address: DNS rebinding
	// (crosssite_test.go).
	opts := chromium.Options(profile, logf, chromedp.Flag("host-resolver-rules", "MAP "+reboundHost+" 127.0.0.1"))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	stop := func() {
		cancel()
		cancelAlloc()
		logf.Close()
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline
		stop()
		return nil, nil, fmt.Errorf("start %s: %w\n%s", chromium.Path(), err, tail(logf.Name(), 4000))
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		stop()
		return nil, nil, err
	}
	fmt.Println("browser:", v)
	return ctx, stop, nil
}

// page is one test's tab on the dashboard.
type page struct {
	t   *testing.T
	ctx context.Context

	mu         sync.Mutex
	console    []string // console errors and warnings
	exceptions []string // uncaught exceptions: a page that throws is broken
	// extra adds the REST API's view to the diagnostics of a failure.
	extra func() string
}

// newPage opens a tab; at the test's end it reports what the page threw.
func newPage(t *testing.T) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx)
	p := &page{t: t, ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == "error" || ev.Type == "warning" {
				p.console = append(p.console, string(ev.Type)+": "+consoleText(ev))
			}
		case *runtime.EventExceptionThrown:
			p.exceptions = append(p.exceptions, exceptionText(ev))
		}
	})
	if err != nil {
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	// Focus and :focus behave as in a focused window although the browser is headless.
	if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Logf("focus emulation: %v", err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		for _, c := range p.console {
			t.Logf("page console %s", c)
		}
		for _, e := range p.exceptions {
			t.Errorf("the page threw: %s", e)
		}
		p.mu.Unlock()
		cancel()
	})
	return p
}

// run runs browser actions with a deadline.
func (p *page) run(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](p *page, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// open loads the page at a route ("#/..."), as a bookmark would, and waits for its h1.
func (p *page) open(route string) {
	p.t.Helper()
	if err := p.run(time.Minute, chromedp.Navigate(dashURL+route)); err != nil {
		p.fatalf("open %s%s: %v", dashURL, route, err)
	}
	p.waitVisible("h1", time.Minute)
}

// waitVisible waits until an element matching the CSS selector is visible.
func (p *page) waitVisible(sel string, timeout time.Duration) {
	p.t.Helper()
	if err := p.run(timeout, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		p.fatalf("%s not visible within %s: %v", sel, timeout, err)
	}
}

// waitGone waits until no element matches the CSS selector.
func (p *page) waitGone(sel string, timeout time.Duration) {
	p.t.Helper()
	if err := p.run(timeout, chromedp.WaitNotPresent(chromedp.CSS(sel))); err != nil {
		p.fatalf("%s still present after %s: %v", sel, timeout, err)
	}
}

// click clicks the first visible element matching the CSS selector, as a mouse does.
// A view re-rendered by its poll between finding the element and clicking it (the
// browser's "Could not find node") is clicked again: the selector finds the new one.
func (p *page) click(sel string) {
	p.t.Helper()
	var err error
	for range 5 {
		if err = p.run(time.Minute, chromedp.Click(chromedp.CSS(sel))); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		p.fatalf("click %s: %v", sel, err)
	}
}

// follow clicks the link to route and waits for the view it leads to.
func (p *page) follow(route string) {
	p.t.Helper()
	p.click(fmt.Sprintf(`a[href=%q]`, route))
	p.waitHash(route)
	p.waitVisible("h1", time.Minute)
}

// waitHash waits until the page's route is route, and the page shows it.
func (p *page) waitHash(route string) {
	p.t.Helper()
	// The page shows route once it has handled the hashchange (app.js marks the body), a
	// task after the address changed: before, the old view is still there.
	p.waitUntil("route "+route, 30*time.Second, func() (bool, string, error) {
		h, err := eval[string](p, `location.hash + " " + (document.body.dataset.route ?? "")`)
		return h == route+" "+route, "location.hash and the route shown: " + h, err
	})
}

// text is the trimmed text of the first element matching sel ("" when there is none).
func (p *page) text(sel string) string {
	p.t.Helper()
	s, err := eval[string](p, fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "").trim()`, sel))
	if err != nil {
		p.fatalf("read %s: %v", sel, err)
	}
	return s
}

// waitText waits until the text of sel is want.
func (p *page) waitText(sel, want string, timeout time.Duration) {
	p.t.Helper()
	p.waitUntil(fmt.Sprintf("%s reads %q", sel, want), timeout, func() (bool, string, error) {
		s, err := eval[string](p, fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "<absent>").trim()`, sel))
		return s == want, fmt.Sprintf("it reads %q", s), err
	})
}

// waitUntil polls cond until it holds; past the deadline the test fails with what cond
// saw last and what the page shows.
func (p *page) waitUntil(what string, timeout time.Duration, cond func() (bool, string, error)) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		ok, detail, err := cond()
		if err != nil {
			detail = fmt.Sprintf("%s (error: %v)", detail, err)
		}
		if ok && err == nil {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			p.fatalf("%s: not within %s; last: %s", what, timeout, last)
		}
		select {
		case <-tick.C:
		case <-p.ctx.Done():
			p.fatalf("%s: the tab ended: %v; last: %s", what, p.ctx.Err(), last)
		}
	}
}

// key sends key presses to the focused element (kb.Tab, kb.Enter, kb.Escape, ...).
func (p *page) key(keys string) {
	p.t.Helper()
	if err := p.run(30*time.Second, chromedp.KeyEvent(keys)); err != nil {
		p.fatalf("press %q: %v", keys, err)
	}
}

// focused describes document.activeElement: its tag and the attributes that name it.
func (p *page) focused() string {
	p.t.Helper()
	s, err := eval[string](p, `(() => {
		const e = document.activeElement;
		if (!e) return "none";
		let d = e.tagName.toLowerCase();
		for (const a of ["id", "href", "data-action", "data-testid"]) {
			if (e.hasAttribute(a)) d += "[" + a + "=" + JSON.stringify(e.getAttribute(a)) + "]";
		}
		return d + " " + JSON.stringify((e.textContent || "").trim().slice(0, 40));
	})()`)
	if err != nil {
		p.fatalf("read the focused element: %v", err)
	}
	return s
}

// focusIs says whether the focused element matches the CSS selector.
func (p *page) focusIs(sel string) bool {
	p.t.Helper()
	ok, err := eval[bool](p, fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, sel))
	if err != nil {
		p.fatalf("match the focused element: %v", err)
	}
	return ok
}

// shot saves a full-page PNG as <TestName>-<view>.png in the artifacts.
func (p *page) shot(view string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		p.t.Errorf("screenshot %s: %v", view, err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(p.t.Name()) + "-" + view + ".png"
	path := filepath.Join(artifactsDir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Errorf("write %s: %v", path, err)
		return
	}
	p.t.Logf("screenshot %s", path)
}

// fatalf fails the test with what the page shows (route, message, view, console) and,
// when the test set it, what the REST API says; it saves a screenshot too.
func (p *page) fatalf(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("%s\n%s", fmt.Sprintf(format, args...), p.diagnostics())
}

func (p *page) diagnostics() string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const q = s => document.querySelector(s);
		const html = e => e ? e.outerHTML : "<absent>";
		const cut = s => s.length > 6000 ? s.slice(0, 6000) + "…" : s;
		return [
			"route: " + location.hash,
			"h1: " + (q("h1")?.textContent ?? "<absent>").trim(),
			"#message: " + JSON.stringify((q("#message")?.textContent ?? "<absent>").trim()),
			"updated: " + (q("[data-testid=updated]")?.textContent ?? "<absent>").trim(),
			"operation: " + cut(html(q("[data-testid=operation]"))),
			"matrix: " + cut(html(q("table[data-testid=matrix]"))),
			"retrying: " + cut(html(q("[data-testid=retrying]"))),
			"objects: " + cut(html(q("table[data-testid=objects]"))),
			"dialog: " + html(q("dialog#confirm")),
			"main: " + cut(html(q("main") ?? document.body)),
		].join("\n");
	})()`))
	if err != nil {
		fmt.Fprintf(&b, "page state unreadable: %v\n", err)
	} else {
		fmt.Fprintf(&b, "--- the page\n%s\n", state)
	}
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		path := filepath.Join(artifactsDir, strings.ReplaceAll(p.t.Name(), "/", "_")+"-FAILED.png")
		if os.WriteFile(path, png, 0o644) == nil {
			fmt.Fprintf(&b, "screenshot at the failure: %s\n", path)
		}
	}
	p.mu.Lock()
	if len(p.console)+len(p.exceptions) > 0 {
		fmt.Fprintf(&b, "--- console\n%s\n", strings.Join(append(append([]string{}, p.exceptions...), p.console...), "\n"))
	}
	p.mu.Unlock()
	if p.extra != nil {
		fmt.Fprintf(&b, "--- the REST API\n%s\n", p.extra())
	}
	return b.String()
}

func consoleText(ev *runtime.EventConsoleAPICalled) string {
	var parts []string
	for _, a := range ev.Args {
		if a.Description != "" {
			parts = append(parts, a.Description)
		} else {
			parts = append(parts, string(a.Value))
		}
	}
	return strings.Join(parts, " ")
}

func exceptionText(ev *runtime.EventExceptionThrown) string {
	d := ev.ExceptionDetails
	if d == nil {
		return "an exception without details"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d:%d)", s, d.URL, d.LineNumber+1, d.ColumnNumber+1)
}
