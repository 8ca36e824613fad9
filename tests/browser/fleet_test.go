package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// fleetRow is the fleet table's row of a fixture's DIG.
func fleetRow(f *fixture) string {
	return fmt.Sprintf(`table[data-testid=fleet] tr[data-dig=%q]`, f.project+"/ca/v1/dig")
}

// fleetRows lists the data-dig of the fleet table's rows, in order.
func (p *page) fleetRows() []string {
	p.t.Helper()
	rows, err := eval[[]string](p, `[...document.querySelectorAll("table[data-testid=fleet] tr[data-dig]")].map(r => r.dataset.dig)`)
	if err != nil {
		p.fatalf("read the fleet's rows: %v", err)
	}
	return rows
}

// choose picks value in the select sel, as a user does (a change event).
func (p *page) choose(sel, value string) {
	p.t.Helper()
	if _, err := eval[bool](p, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q;
		s.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, sel, value)); err != nil {
		p.fatalf("choose %s in %s: %v", value, sel, err)
	}
}

// The home is the fleet: each DIG's row shows its state and its clusters by state, the
// summary counts it, the filters narrow the table (and the address keeps them), a change
// made elsewhere shows without a reload, and the row leads to the DIG.
func TestFleetHome(t *testing.T) {
	cluster := devCluster.name
	a := newProject(t, "br-fleet-a", cluster)
	a.deploy(cluster)
	must(t, 202, "POST", a.dig()+"/approve", nil)
	must(t, 202, "POST", a.dig()+"/instantiate", nil)
	b := newProject(t, "br-fleet-b", cluster)
	b.deploy(cluster)
	p := newPage(t)
	p.extra = func() string { return a.restView() + b.restView() }

	p.open("#/")
	if h := p.oneH1(); h != "Fleet" {
		p.fatalf("the home's h1 reads %q", h)
	}
	rowA, rowB := fleetRow(a), fleetRow(b)
	p.waitVisible(rowA+`[data-state="Instantiated"]`, 5*time.Minute)
	p.waitUntil("a's row: 1 cluster, Applied", 5*time.Minute, func() (bool, string, error) {
		s, err := eval[string](p, fmt.Sprintf(`(() => { const c = document.querySelector(%q);
			return c ? c.dataset.total + " " + [...c.querySelectorAll("li[data-state]")].map(l => l.dataset.state).join(",") : "<no cell>" })()`,
			rowA+" td[data-testid=fleet-clusters]"))
		return s == "1 Applied", s, err
	})
	p.waitVisible(rowB+`[data-state="Created"]`, time.Minute)
	if n, err := strconv.Atoi(p.attr(`[data-testid=summary-digs]`, "data-count")); err != nil || n < 2 {
		p.fatalf("the summary counts %d DIGs (%v); the page lists %v", n, err, p.fleetRows())
	}
	p.noError()
	// Its readiness, read live when asked: its one cluster, counted on the row.
	p.click(rowA + ` td[data-testid=fleet-ready] button[data-action=read-readiness]`)
	p.waitVisible(rowA+` td[data-testid=fleet-ready][data-total="1"]`, 2*time.Minute)
	if s := p.text(rowA + ` td[data-testid=fleet-ready]`); !strings.Contains(s, " of 1 clusters ready") || !strings.Contains(s, "read ") {
		p.fatalf("a's ready cell after a read reads %q", s)
	}
	p.shot("fleet")

	// The name filter, typed: b's row alone, and the address says so.
	if err := p.run(time.Minute, chromedp.SendKeys(chromedp.CSS("#fleet-q"), "br-fleet-b")); err != nil {
		p.fatalf("type into #fleet-q: %v", err)
	}
	p.waitUntil("b's row alone", 30*time.Second, func() (bool, string, error) {
		rows := p.fleetRows()
		return slices.Equal(rows, []string{b.project + "/ca/v1/dig"}), fmt.Sprint(rows), nil
	})
	p.waitHash("#/?q=br-fleet-b")
	// Approved over REST: the row follows without a reload.
	must(t, 202, "POST", b.dig()+"/approve", nil)
	p.waitVisible(rowB+`[data-state="Approved"]`, 30*time.Second)

	// The state filter with the name filter: nothing matches, and the table says so.
	p.choose("#fleet-state", "Instantiated")
	p.waitUntil("no row", 30*time.Second, func() (bool, string, error) {
		rows := p.fleetRows()
		return len(rows) == 0 && strings.Contains(p.text("table[data-testid=fleet] td.empty"), "matches the filters"), fmt.Sprint(rows), nil
	})
	if _, err := eval[bool](p, `(() => { const q = document.querySelector("#fleet-q"); q.value = "";
		q.dispatchEvent(new Event("input", {bubbles: true})); return true })()`); err != nil {
		p.fatalf("clear #fleet-q: %v", err)
	}
	p.waitVisible(rowA, 30*time.Second)
	if rows := p.fleetRows(); slices.Contains(rows, b.project+"/ca/v1/dig") {
		p.fatalf("the Instantiated filter lists b's Approved DIG: %v", rows)
	}
	p.waitHash("#/?state=Instantiated")
	p.shot("fleet-filtered")

	// A reload keeps the filters (they are in the address); the row leads to the DIG.
	p.open("#/?state=Instantiated&q=br-fleet-a")
	p.waitUntil("a's row alone after a reload", 30*time.Second, func() (bool, string, error) {
		rows := p.fleetRows()
		return slices.Equal(rows, []string{a.project + "/ca/v1/dig"}), fmt.Sprint(rows), nil
	})
	if v, q := p.attr("#fleet-state", "value"), p.attr("#fleet-q", "value"); v != "Instantiated" || q != "br-fleet-a" {
		p.fatalf("after a reload the filters read state %q, name %q", v, q)
	}

	// A count of the summary leads to what it counts: "need attention" lists those DIGs.
	p.click(`[data-testid=summary-attention] a`)
	p.waitHash("#/?sort=attention&attention=true")
	p.waitUntil("the DIGs needing attention, as many as the summary counts", 30*time.Second, func() (bool, string, error) {
		n, err := strconv.Atoi(p.attr(`[data-testid=summary-attention]`, "data-count"))
		rows, _ := eval[[]string](p, `[...document.querySelectorAll("table[data-testid=fleet] tr[data-dig]")].map(r => r.dataset.attention)`)
		checked, _ := eval[bool](p, `document.querySelector("#fleet-attention").checked`)
		return err == nil && checked && len(rows) == n && !slices.Contains(rows, "false"), fmt.Sprintf("count %d, rows %v, checked %v", n, rows, checked), err
	})
	p.open("#/?state=Instantiated&q=br-fleet-a")
	p.follow(a.digRoute())
	p.waitText(digState, "Instantiated", time.Minute)

	// The cluster's view: a's DIG runs there, its app's cell leads to its objects.
	p.open(fmt.Sprintf("#/cp/%s/c/%s", provider, cluster))
	if h := p.oneH1(); h != "Cluster "+provider+"+"+cluster {
		p.fatalf("the cluster view's h1 reads %q", h)
	}
	onCluster := fmt.Sprintf(`table[data-testid=cluster-digs] tr[data-dig=%q]`, a.project+"/ca/v1/dig")
	p.waitVisible(onCluster+`[data-state="Ready"]`, time.Minute) // the home's read found it Ready
	if n, _ := eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, fmt.Sprintf(`table[data-testid=cluster-digs] tr[data-dig=%q]`, b.project+"/ca/v1/dig"))); n != 0 {
		p.fatalf("b's DIG, never instantiated, shows on the cluster")
	}
	p.noError()
	// The cluster's reachability: the probes' (every 2 s in this stack) — a word, not only a colour.
	p.waitUntil("the cluster reachable", time.Minute, func() (bool, string, error) {
		st, err := eval[string](p, `document.querySelector('[data-testid=cluster-reachability]')?.dataset.state ?? ''`)
		text, _ := eval[string](p, `document.querySelector('[data-testid=cluster-reachability]')?.textContent ?? ''`)
		return st == "Reachable" && strings.Contains(text, "reachable since"), st + ": " + text, err
	})
	p.shot("cluster")
	p.click(onCluster + ` li[data-app=` + app + `] a`)
	p.waitHash(a.objectsRoute(cluster))
}

// attr is the attribute (or, for value, the property) of the first element matching sel.
func (p *page) attr(sel, name string) string {
	p.t.Helper()
	expr := fmt.Sprintf(`document.querySelector(%q)?.getAttribute(%q) ?? ""`, sel, name)
	if name == "value" {
		expr = fmt.Sprintf(`document.querySelector(%q)?.value ?? ""`, sel)
	}
	s, err := eval[string](p, expr)
	if err != nil {
		p.fatalf("read %s of %s: %v", name, sel, err)
	}
	return s
}

// A stage waiting for an approval shows on the home with its button; Cancel in the dialog
// changes nothing, Approve lets the rollout go on, which the REST API confirms.
func TestFleetApprovesAWaitingStage(t *testing.T) {
	f := gated(t, "br-fleet-gate")
	p := newPage(t)
	p.extra = f.restView

	p.open("#/?q=br-fleet-gate")
	row := fleetRow(f)
	button := row + ` td[data-testid=fleet-rollout][data-waiting="approval"] button[data-action=approve-stage]`
	p.waitVisible(button, 2*time.Minute)
	if a := p.attr(row, "data-attention"); a != "true" {
		p.fatalf("a DIG waiting for an approval does not need attention (data-attention %q)", a)
	}
	p.shot("fleet-approval")

	p.click(button)
	p.waitVisible("dialog#confirm[open]", 30*time.Second)
	p.click("#confirm-no")
	p.waitGone("dialog#confirm[open]", 30*time.Second)
	if v, raw := f.dashboard(); !strings.Contains(raw, `"WaitingForApproval"`) {
		p.fatalf("after a cancelled approval the rollout is no longer waiting: %s (state %s)", raw, v.State)
	}

	p.click(button)
	p.waitVisible("dialog#confirm[open]", 30*time.Second)
	p.click("#confirm-yes")
	p.waitText(message, "Stage gate of dig approved.", 30*time.Second)
	p.waitGone(button, 2*time.Minute)
	f.eventually("the rollout past its gate", 2*time.Minute, func() error {
		if _, raw := f.dashboard(); strings.Contains(raw, `"WaitingForApproval"`) {
			return fmt.Errorf("still waiting: %s", raw)
		}
		return nil
	})
}

// A DIG that drifted (a ConfigMap deleted by hand, found by a check asked over REST)
// shows on the home with "Correct drift"; confirming it applies the object again, which
// the cluster confirms, and the row then says the drift was corrected.
func TestFleetCorrectsDrift(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-fleet-drift", cluster)
	f.deploy(cluster)
	must(t, 202, "POST", f.dig()+"/approve", nil)
	must(t, 202, "POST", f.dig()+"/instantiate", nil)
	f.eventually("instantiated", 3*time.Minute, func() error {
		var s digStatus
		if err := json.Unmarshal(must(t, 200, "GET", f.dig()+"/status", nil), &s); err != nil || s.Status != "Instantiated" {
			return fmt.Errorf("status %q (%v)", s.Status, err)
		}
		return nil
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", devCluster.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "web-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, 202, "POST", f.dig()+"/drift-check", nil) // detection only

	p := newPage(t)
	p.extra = f.restView
	p.open("#/?q=br-fleet-drift")
	row := fleetRow(f)
	button := row + ` td[data-testid=fleet-drift][data-drifted="1"] button[data-action=correct-drift]`
	p.waitVisible(button, 2*time.Minute)
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "web-config", metav1.GetOptions{}); err == nil {
		p.fatalf("the check without correction applied the ConfigMap again")
	}
	p.shot("fleet-drift")
	p.click(button)
	p.waitVisible("dialog#confirm[open]", 30*time.Second)
	p.click("#confirm-yes")
	p.waitText(message, "Drift correction of dig started.", 30*time.Second)
	p.waitVisible(row+` td[data-testid=fleet-drift][data-drifted="0"]`, 2*time.Minute)
	if s := p.text(row + ` td[data-testid=fleet-drift]`); !strings.Contains(s, "1 drifted objects corrected") {
		p.fatalf("the drift cell after the correction reads %q", s)
	}
	f.eventually("web-config back on the cluster", time.Minute, func() error {
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "web-config", metav1.GetOptions{})
		return err
	})
}
