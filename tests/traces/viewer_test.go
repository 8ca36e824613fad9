package traces

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/temco/temco/internal/dev/testenv/chromium"
)

// viewTrace reads the trace back as an operator would, in the stack's trace viewer (the
// page Jaeger serves as its UI, internal/dev/devstack/traceview) in a headless Chromium:
// the api's service picked, the trace listed, and opened, its spans the workflow's and an
// apply per cluster, each with the cluster among its attributes.
func viewTrace(t *testing.T, traceID string) {
	if _, err := os.Stat(chromium.Path()); err != nil {
		t.Fatalf("no browser at %s (`make chromium` installs Debian's): %v", chromium.Path(), err)
	}
	tab, exceptions := startChromium(t)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			status, _ := chromedp.Run(tab, chromedp.Evaluate[string](`(document.getElementById("status") || {}).textContent || ""`))
			t.Fatalf("%s: %v (the page says %q; it threw %q)", what, err, status, exceptions())
		}
	}

	step("the viewer lists temco-api among the services", chromedp.Navigate(stack.Jaeger.QueryURL()+"/"),
		chromedp.WaitReady(chromedp.CSS(`#service option[value="temco-api"]`)))
	step("a search of temco-api's last 15 minutes", chromedp.SetValue(chromedp.ID("service"), "temco-api"),
		chromedp.SetValue(chromedp.ID("range"), "15"), chromedp.Click(chromedp.ID("find")))
	row := `#traces tr[data-trace-id="` + traceID + `"]`
	step("the instantiate's trace listed", chromedp.WaitVisible(chromedp.CSS(row+" a")))
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+row+` th, `+row+` td')].map(c => c.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("listed: %q", cells)
	if len(cells) != 5 || !strings.HasSuffix(cells[0], "/deployment-intent-groups/:deploymentIntentGroup/instantiate") ||
		!strings.Contains(cells[4], "temco-api") || !strings.Contains(cells[4], "temco-worker") {
		t.Fatalf("the trace's row %q: want the instantiate request as its root, and temco-api and temco-worker among its services", cells)
	}

	step("the trace opened with the Instantiate workflow's span", chromedp.Click(chromedp.CSS(row+" a")),
		chromedp.WaitVisible(chromedp.CSS(`#spans tr.span[data-span-name="RunWorkflow:Instantiate"]`)))
	applies := `#spans tr.span[data-span-name="cluster.apply"] button`
	step("an apply span for each cluster", chromedp.WaitVisible(chromedp.CSSAll(applies),
		chromedp.AtLeast(len(stack.Clusters))))
	buttons, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(applies)))
	if err != nil {
		t.Fatal(err)
	}
	if len(buttons) != len(stack.Clusters) {
		t.Fatalf("%d cluster.apply spans, want one per cluster (%d)", len(buttons), len(stack.Clusters))
	}
	for _, b := range buttons {
		step("open a cluster.apply span's attributes", chromedp.MouseClickNode(b))
	}
	// The shown attributes of the opened spans: temco.cluster of each.
	clusters, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => {
		const v = [...document.querySelectorAll('#spans tr.details:not([hidden]) td[data-attr="temco.cluster"]')].map(td => td.textContent);
		return v.length >= `+fmt.Sprint(len(stack.Clusters))+` ? v : null;
	})()`, chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("the apply spans' attributes: %v (it threw %q)", err, exceptions())
	}
	var want []string
	for _, c := range stack.Clusters {
		want = append(want, "local+"+c.Name)
	}
	slices.Sort(clusters)
	if !slices.Equal(clusters, want) {
		t.Fatalf("the apply spans' temco.cluster: %q, want %q", clusters, want)
	}
	if e := exceptions(); len(e) > 0 {
		t.Fatalf("the page threw: %q", e)
	}
}

// startChromium starts a headless Chromium (the flags tests/browser's harness uses) and
// returns a tab, and what the page threw so far.
func startChromium(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	opts := chromium.Options(filepath.Join(dir, "profile"), logf)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); logf.Close() })
	if err := chromedp.Do(browser); err != nil { // starts the browser, with no deadline
		t.Fatalf("start %s: %v", chromium.Path(), err)
	}
	tab, cancelTab := chromedp.NewContext(browser)
	t.Cleanup(cancelTab)
	var mu sync.Mutex
	var threw []string
	if err := chromedp.Listen(tab, func(ev any) {
		if ev, ok := ev.(*runtime.EventExceptionThrown); ok {
			text := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				text += " " + ev.ExceptionDetails.Exception.Description
			}
			mu.Lock()
			threw = append(threw, text)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return tab, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(threw) }
}
