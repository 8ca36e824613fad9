package browser

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// The DIG view's pictures (issue 46): the rollout's timeline and the revision history.
const (
	timeline  = `ol[data-testid=rollout-timeline]`
	revisions = `ol[data-testid=revisions]`
)

// timelineStage is the timeline's card of a stage.
func timelineStage(name string) string {
	return fmt.Sprintf(`%s li[data-testid=timeline-stage][data-stage=%q]`, timeline, name)
}

// texts evaluates an expression of the page answering a list of strings.
func (p *page) texts(what, expr string) []string {
	p.t.Helper()
	s, err := eval[[]string](p, expr)
	if err != nil {
		p.fatalf("read %s: %v", what, err)
	}
	return s
}

var bakeLeft = regexp.MustCompile(`^◷ Bake: \d+s left \(\d\d:\d\d:\d\d\)$`)

// A staged rollout draws as a timeline of its stages, in order: the stage at work is the
// current one, its bake counts down, then it says in words that it waits for an approval
// (and its card is marked for screen readers as the current step); the stages table's
// approve button, reached with the keyboard, lets the rollout go on, which the timeline
// and the REST API show.
func TestRolloutTimeline(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-timeline", cluster)
	f.deploy(cluster)
	must(t, 201, "POST", f.dig()+"/rollout-strategies", res("waves", map[string]any{"stages": []any{
		map[string]any{"name": "canary", "clusters": []string{cluster}, "progressDeadline": "5m", "minSuccessTime": "20s",
			"after": []any{map[string]any{"type": "approval"}}},
		map[string]any{"name": "edge", "clusterLabels": []string{"edge"}, "before": []any{map[string]any{"type": "approval"}}},
		map[string]any{"name": "rest"},
	}}))
	must(t, 202, "POST", f.dig()+"/approve", nil)
	must(t, 202, "POST", f.dig()+"/instantiate", nil)
	p := newPage(t)
	p.extra = f.restView

	p.open(f.digRoute())
	p.oneH1()
	p.waitVisible(timeline, 2*time.Minute)
	if got := p.texts("the timeline's stages", `[...document.querySelectorAll("ol[data-testid=rollout-timeline] > li")].map(l => l.dataset.stage)`); !slices.Equal(got, []string{"canary", "edge", "rest"}) {
		p.fatalf("the timeline's stages, left to right: %v; want canary, edge, rest", got)
	}
	// The stages without a cluster say so in words, not by their tint alone.
	for _, s := range []string{"edge", "rest"} {
		p.waitUntil("stage "+s+" skipped, in words", time.Minute, func() (bool, string, error) {
			st := p.text(timelineStage(s) + ` [data-testid=stage-state]`)
			return p.attr(timelineStage(s), "data-state") == "Skipped" && strings.Contains(st, "Skipped: no cluster"), fmt.Sprintf("%q", st), nil
		})
	}

	// The bake counts down on the canary's card.
	p.waitUntil("the canary baking, its time left shown", 5*time.Minute, func() (bool, string, error) {
		st, timer := p.attr(timelineStage("canary"), "data-state"), p.text(timelineStage("canary")+` [data-testid=stage-timer]`)
		return st == "Baking" && bakeLeft.MatchString(timer), fmt.Sprintf("state %s, timer %q", st, timer), nil
	})
	p.shot("rollout-baking")

	waiting := timelineStage("canary") + `[data-state="WaitingForApproval"]`
	p.waitVisible(waiting, 2*time.Minute)
	card := p.text(waiting)
	for _, want := range []string{"Stage 1 of 3: canary", "Waiting for an approval", "1 of 1 cluster done, 0 failed", "Waits for an approval after its clusters were changed"} {
		if !strings.Contains(card, want) {
			p.fatalf("the waiting stage's card does not say %q: %q", want, card)
		}
	}
	// Its bar (a decoration of the numbers above) is full: every cluster done.
	if r, err := eval[float64](p, fmt.Sprintf(`(() => { const b = document.querySelector(%q);
		const d = b?.querySelector(".done"); return d ? d.getBoundingClientRect().width / b.clientWidth : -1 })()`, waiting+` .bar`)); err != nil || r < 0.95 {
		p.fatalf("the waiting stage's bar is %.2f done (%v), want full", r, err)
	}
	if c := p.attr(waiting, "aria-current"); c != "step" {
		p.fatalf("the waiting stage is not the current step for screen readers: aria-current=%q", c)
	}
	if n, err := eval[int](p, `document.querySelectorAll("ol[data-testid=rollout-timeline] [aria-current]").length`); err != nil || n != 1 {
		p.fatalf("%d stages are the current one (%v), want 1", n, err)
	}
	// The timeline scrolls sideways in a region the keyboard reaches and that has a name.
	if l := p.attr(`.timeline-box[role=region][tabindex="0"]`, "aria-label"); !strings.HasPrefix(l, "Rollout timeline: 3 stages") {
		p.fatalf("the timeline's region is named %q", l)
	}
	p.noError()
	p.shot("rollout-timeline")

	// Pause, then resume, from the page, each confirmed; the API witnesses both.
	p.pauseAndResume(f)
	resume := `div[data-testid=rollout-actions] button[data-action=rollout-resume]`
	p.waitGone(resume, 30*time.Second) // a running rollout is not offered Resume

	// The approve button stays in the stages table; the keyboard reaches it.
	button := `table[data-testid=stages] tr[data-stage="canary"] button[data-action=approve-stage]`
	p.tabTo(button)
	p.key(kb.Enter)
	p.waitVisible(dialogOn, 30*time.Second)
	p.click("#confirm-yes")
	p.waitText(message, "Stage canary of dig approved.", 30*time.Second)
	p.waitVisible(timelineStage("canary")+`[data-state="Succeeded"]`, 2*time.Minute)
	p.waitGone(button, time.Minute)
	if s := p.text(timelineStage("canary")); !strings.Contains(s, "Approved: after its clusters") || !strings.Contains(s, "Succeeded") {
		p.fatalf("the approved stage's card reads %q", s)
	}
	f.eventually("the rollout past its approval", 2*time.Minute, func() error {
		if _, raw := f.dashboard(); strings.Contains(raw, `"WaitingForApproval"`) || !strings.Contains(raw, `"state":"Succeeded"`) {
			return fmt.Errorf("not past it: %s", raw)
		}
		return nil
	})
}

// A DIG instantiated then updated once shows two revisions, newest first, the current
// one marked in words; the first says there is nothing before it; the newer one's changes
// are read only when it is opened (with the keyboard), then name the field the update
// changed, as the snapshots' diff over REST does.
func TestRevisionHistory(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-revisions", cluster)
	f.deploy(cluster)
	must(t, 202, "POST", f.dig()+"/approve", nil)
	must(t, 202, "POST", f.dig()+"/instantiate", nil)
	// instantiated: revision rev is the current one, deployed, and no operation runs.
	instantiated := func(rev int64) func() error {
		return func() error {
			_, raw := f.dashboard()
			var v struct {
				State, ContextStatus string
				Revision             int64
				Operation            any
			}
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				return err
			}
			if v.Revision != rev || v.State != "Instantiated" || v.ContextStatus != "Instantiated" || v.Operation != nil {
				return fmt.Errorf("revision %d not done: %s", rev, raw)
			}
			return nil
		}
	}
	f.eventually("the instantiate done", 5*time.Minute, instantiated(1))
	must(t, 200, "PUT", f.dig(), res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "default",
		"overrideValues": []any{map[string]any{"app": app, "values": map[string]string{"message": "changed by the update"}}}}))
	var acc struct {
		Revision int64 `json:"revision"`
	}
	if err := json.Unmarshal(must(t, 202, "POST", f.dig()+"/update", nil), &acc); err != nil || acc.Revision != 2 {
		t.Fatalf("the update's answer: revision %d (%v), want 2", acc.Revision, err)
	}
	f.eventually("the update done", 5*time.Minute, instantiated(2))
	var snaps []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(must(t, 200, "GET", f.dig()+"/snapshots", nil), &snaps); err != nil || len(snaps) != 2 {
		t.Fatalf("the DIG's snapshots: %+v (%v), want 2", snaps, err)
	}
	p := newPage(t)
	p.extra = f.restView

	p.open(f.digRoute())
	p.oneH1()
	entries := `[...document.querySelectorAll("ol[data-testid=revisions] > li")]`
	p.waitUntil("revisions 2 then 1, each with its snapshot", time.Minute, func() (bool, string, error) {
		got, err := eval[[]string](p, entries+`.map(l => l.dataset.revision + ":" + (l.querySelector("[data-testid=snapshot-id]")?.textContent ?? ""))`)
		return slices.Equal(got, []string{"2:" + snaps[0].ID, "1:" + snaps[1].ID}), fmt.Sprint(got), err
	})
	newer, older := revisions+` > li[data-revision="2"]`, revisions+` > li[data-revision="1"]`
	if s := p.text(newer + ` h3`); s != "Revision 2 ◆ current" {
		p.fatalf("the newest revision's title reads %q, want it marked current", s)
	}
	if s := p.text(older + ` h3`); s != "Revision 1" {
		p.fatalf("the older revision's title reads %q", s)
	}
	if s := p.text(older + ` [data-testid=revision-changes]`); !strings.HasPrefix(s, "The first revision") {
		p.fatalf("revision 1 says %q of its changes", s)
	}
	if s := p.text(newer + ` p.revision-line`); !strings.Contains(s, "Instantiated by update") {
		p.fatalf("revision 2's line reads %q", s)
	}

	// Nothing asked for the diff until the revision is opened.
	diffCalls := func() []string {
		var d []string
		for _, c := range p.apiCalls() {
			if strings.Contains(c, "/diff/") {
				d = append(d, c)
			}
		}
		return d
	}
	if d := diffCalls(); len(d) != 0 {
		p.fatalf("the page read diffs before any revision was opened: %v", d)
	}
	summary := newer + ` details[data-testid=revision-changes] > summary`
	if s := p.text(summary); s != "What changed since revision 1" {
		p.fatalf("revision 2's changes are titled %q", s)
	}
	p.tabTo(summary)
	p.key(kb.Enter)
	change := newer + ` details[open] ul[data-testid=diff] > li`
	p.waitVisible(change, 30*time.Second)
	want := fmt.Sprintf("/v2/projects/%s/composite-apps/ca/v1/deployment-intent-groups/dig/snapshots/%s/diff/%s", f.project, snaps[1].ID, snaps[0].ID)
	if d := diffCalls(); !slices.Equal(d, []string{want}) {
		p.fatalf("opening revision 2 read the diffs %v, want %s once", d, want)
	}
	var diff struct {
		Changes []struct{ Resource, Path, Op string } `json:"changes"`
	}
	if err := json.Unmarshal(must(t, 200, "GET", f.dig()+"/snapshots/"+snaps[1].ID+"/diff/"+snaps[0].ID, nil), &diff); err != nil || len(diff.Changes) == 0 {
		t.Fatalf("the REST diff: %+v (%v)", diff, err)
	}
	got := p.texts("the changes shown", `[...document.querySelectorAll(`+fmt.Sprintf("%q", change)+`)].map(l => l.dataset.op + " " + l.querySelector("code.field").textContent)`)
	var fromREST []string
	for _, c := range diff.Changes {
		path := c.Path
		if path == "" {
			path = "(the whole resource)"
		}
		fromREST = append(fromREST, c.Op+" "+path)
	}
	if !slices.Equal(got, fromREST) {
		p.fatalf("revision 2's changes on the page: %v; the REST diff: %v", got, fromREST)
	}
	if s := p.text(change); !strings.Contains(s, "overrideValues") || !strings.Contains(s, "changed by the update") {
		p.fatalf("revision 2's change does not name the override the update brought: %q", s)
	}
	// The page's polls keep it open, with the focus on its summary, and read it only once.
	p.noError()
	if !p.focusIs(summary) {
		p.fatalf("after a poll the focus is on %s, not revision 2's summary", p.focused())
	}
	p.waitVisible(change, 10*time.Second)
	if d := diffCalls(); len(d) != 1 {
		p.fatalf("the polls read the diff again: %v", d)
	}
	p.shot("revisions")
}

// pauseAndResume pauses, then resumes, f's running rollout with the DIG page's buttons,
// each confirmed in the dialog; the page says so, and the API's rollout state follows.
func (p *page) pauseAndResume(f *fixture) {
	p.t.Helper()
	for _, c := range []struct{ action, label, then string }{{"pause", "Pause rollout", "Paused"}, {"resume", "Resume rollout", "Running"}} {
		cmd := `div[data-testid=rollout-actions] button[data-action=rollout-` + c.action + `]`
		p.waitVisible(cmd, time.Minute)
		p.click(cmd)
		p.waitVisible(dialogOn, 30*time.Second)
		p.click("#confirm-yes")
		p.waitUntil("the page saying the "+c.action+" went through", 30*time.Second, func() (bool, string, error) {
			s := strings.TrimSpace(p.text(message))
			return strings.HasPrefix(s, c.label+": the rollout of dig is"), s, nil
		})
		f.eventually("the rollout "+c.then, time.Minute, func() error {
			var v struct {
				Rollout struct {
					State string `json:"state"`
				} `json:"rollout"`
			}
			if err := json.Unmarshal(must(f.t, 200, "GET", f.dig()+"/dashboard", nil), &v); err != nil || v.Rollout.State != c.then {
				return fmt.Errorf("rollout %q (%v)", v.Rollout.State, err)
			}
			return nil
		})
	}
}
