package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apiclient "github.com/temco/temco/client"
	"github.com/temco/temco/internal/dev/testenv"
)

// The apps of every chaos DIG: one ConfigMap each, named and labelled after the DIG,
// holding the values' generation and the chart's version, so that what a cluster holds
// says which configuration put it there.
var appNames = []string{"web", "db"}

const digLabel = "chaos-dig"

func chart(app string, version int) []byte {
	return testenv.Chart(app, "dig: none\ngen: \"0\"\n", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Values.dig }}-{{ .Chart.Name }}
  labels: {` + digLabel + `: {{ .Values.dig | quote }}}
data:
  gen: {{ .Values.gen | quote }}
  chart: "` + strconv.Itoa(version) + `"
`})
}

// config is what a DIG's resources say: the values' generation, the charts' version and
// the clusters its apps are placed on.
type config struct {
	Gen, Chart int
	Clusters   []string
}

// view is what the actors read of a DIG: its state (GET DIG/state), in the client
// module's type.
type view = apiclient.DIGState

// digActor drives one DIG through random valid lifecycle sequences, one request at a time,
// and keeps what it knows: the configuration stored now and the one of each revision.
type digActor struct {
	r       *run
	c       *client
	rnd     *rand.Rand
	project string
	id      string // the composite app's name, and the objects' label value
	rollout bool   // a staged rollout whose first stage waits for an approval
	clouds  []string

	exists bool              // the DIG (its composite app always exists once set up)
	stored config            // what its resources say now
	revs   map[string]config // what each revision deployed, by its context
	// workflowOps counts the accepted operations that run a workflow (not approve).
	workflowOps int
	// unresolved counts the operations whose acceptance the end of the chaos phase left
	// unknown (a lost answer not yet resolved).
	unresolved int
	// pending is the configuration of the revision an operation still running (or
	// unresolved) will deploy, and the revision before it.
	pending     *config
	pendingFrom string // the context current before it
	// trail is what the actor did, for the report of a DIG the checks flag.
	trail []string
	// deleting: a delete was refused half-way (an operation started late); terminate it
	// if it is deployed, then delete it again.
	deleting bool
}

func (d *digActor) log(format string, args ...any) {
	d.trail = append(d.trail, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

func (d *digActor) ca() string  { return "/projects/" + d.project + "/composite-apps/" + d.id + "/v1" }
func (d *digActor) dig() string { return d.ca() + "/deployment-intent-groups/dig" }

func (d *digActor) label() string { return d.project + "-" + d.id }

// create makes path's resource, whatever the kills: an answer lost is resolved by reading
// path back. A 5xx that left the resource is a violation.
func (d *digActor) create(ctx context.Context, path string, send func() answer) error {
	for ctx.Err() == nil {
		a := send()
		switch {
		case a.ok():
			return nil
		case a.busy():
			d.r.pause(ctx)
			continue
		case a.code != http.StatusConflict && !a.lost():
			return fmt.Errorf("create %s: %s", path, a)
		}
		// A conflict: an earlier try whose answer was lost made it.
		found, err := d.c.read(ctx, path, nil)
		if err != nil {
			return err
		}
		if found {
			if a.code >= 500 {
				d.r.violation("a %d to the create of %s left it created: %s", a.code, path, a)
			}
			return nil
		}
		if a.code == http.StatusConflict {
			return fmt.Errorf("create %s: %s, and it is not there", path, a)
		}
		d.r.pause(ctx)
	}
	return ctx.Err()
}

// put replaces path's resource; a lost answer is resolved by reading it back.
func (d *digActor) put(ctx context.Context, path string, send func() answer, applied func() bool) error {
	for ctx.Err() == nil {
		a := send()
		if a.ok() {
			return nil
		}
		if a.busy() {
			d.r.pause(ctx)
			continue
		}
		if !a.lost() {
			return fmt.Errorf("PUT %s: %s", path, a)
		}
		if applied() {
			if a.code >= 500 {
				d.r.violation("a %d to PUT %s left it changed: %s", a.code, path, a)
			}
			return nil
		}
		d.r.pause(ctx)
	}
	return ctx.Err()
}

func (d *digActor) placement(clusters []string) map[string]any {
	var all []any
	for _, cl := range clusters {
		all = append(all, map[string]any{"clusterProvider": providerOf(cl), "cluster": cl})
	}
	return map[string]any{"allOf": all}
}

func (d *digActor) digSpec() map[string]any {
	var ov []any
	for _, a := range appNames {
		ov = append(ov, map[string]any{"app": a, "values": map[string]any{"dig": d.label(), "gen": strconv.Itoa(d.stored.Gen)}})
	}
	return map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "default", "overrideValues": ov}
}

// setUp makes the composite app with its apps and profiles (before the kills start).
func (d *digActor) setUp(ctx context.Context) error {
	d.stored = config{Gen: 1, Chart: 1, Clusters: d.pickClusters()}
	steps := []struct {
		path string
		send func() answer
	}{{d.ca(), func() answer {
		return d.c.do("POST", "/projects/"+d.project+"/composite-apps", res(d.id, map[string]any{"compositeAppVersion": "v1"}))
	}}, {d.ca() + "/composite-profiles/prof", func() answer { return d.c.do("POST", d.ca()+"/composite-profiles", res("prof", nil)) }}}
	for _, a := range appNames {
		steps = append(steps, struct {
			path string
			send func() answer
		}{d.ca() + "/apps/" + a, func() answer { return d.c.multipart("POST", d.ca()+"/apps", res(a, nil), chart(a, 1)) }},
			struct {
				path string
				send func() answer
			}{d.ca() + "/composite-profiles/prof/profiles/" + a, func() answer {
				return d.c.multipart("POST", d.ca()+"/composite-profiles/prof/profiles", res(a, map[string]any{"app": a}), testenv.Profile("{}\n"))
			}})
	}
	for _, s := range steps {
		if err := d.create(ctx, s.path, s.send); err != nil {
			return err
		}
	}
	return nil
}

// pickClusters is a random non-empty set of the fleet's clusters; a rollout's has
// cluster1, its first stage's.
func (d *digActor) pickClusters() []string {
	var out []string
	for _, cl := range d.r.clusters {
		if d.rnd.IntN(2) == 0 || d.rollout && cl == d.r.clusters[0] {
			out = append(out, cl)
		}
	}
	if len(out) == 0 {
		out = []string{d.r.clusters[d.rnd.IntN(len(d.r.clusters))]}
	}
	return out
}

// makeDIG creates the DIG with its placement (and rollout strategy) and approves it.
func (d *digActor) makeDIG(ctx context.Context) error {
	gpi := d.dig() + "/generic-placement-intents/gpi"
	type step struct {
		path string
		send func() answer
	}
	steps := []step{
		{d.dig(), func() answer { return d.c.do("POST", d.ca()+"/deployment-intent-groups", res("dig", d.digSpec())) }},
		{gpi, func() answer { return d.c.do("POST", d.dig()+"/generic-placement-intents", res("gpi", nil)) }},
	}
	for _, a := range appNames {
		steps = append(steps, step{gpi + "/app-intents/" + a, func() answer {
			return d.c.do("POST", gpi+"/app-intents", res(a, map[string]any{"app": a, "intent": d.placement(d.stored.Clusters)}))
		}})
	}
	steps = append(steps, step{d.dig() + "/intents/intents", func() answer {
		return d.c.do("POST", d.dig()+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}}))
	}})
	if d.rollout {
		steps = append(steps, step{d.dig() + "/rollout-strategies/rings", func() answer {
			return d.c.do("POST", d.dig()+"/rollout-strategies", res("rings", map[string]any{"stages": []any{
				map[string]any{"name": "canary", "clusters": []string{d.r.clusters[0]}, "before": []any{map[string]string{"type": "approval"}}},
				map[string]any{"name": "rest"}}}))
		}})
	}
	for _, s := range steps {
		if err := d.create(ctx, s.path, s.send); err != nil {
			return err
		}
	}
	d.exists = true
	return nil
}

// deleteDIG deletes the DIG and its children, children first.
func (d *digActor) deleteDIG(ctx context.Context) error {
	gpi := d.dig() + "/generic-placement-intents/gpi"
	paths := []string{d.dig() + "/intents/intents"}
	for _, a := range appNames {
		paths = append(paths, gpi+"/app-intents/"+a)
	}
	paths = append(paths, gpi)
	if d.rollout {
		paths = append(paths, d.dig()+"/rollout-strategies/rings")
	}
	for _, p := range append(paths, d.dig()) {
		for ctx.Err() == nil {
			a := d.c.do("DELETE", p, nil)
			if a.ok() || a.code == http.StatusNotFound {
				break
			}
			if a.code == http.StatusConflict && !a.busy() { // a late operation changed its state
				d.r.count("refused delete")
				d.log("DELETE %s refused: %s", p, a)
				d.deleting = true // half its children are gone: the next steps end it
				return nil
			}
			if !a.lost() && !a.busy() {
				return fmt.Errorf("DELETE %s: %s", p, a)
			}
			d.r.pause(ctx)
		}
	}
	d.exists, d.deleting = false, false
	d.revs = map[string]config{}
	d.log("deleted")
	return ctx.Err()
}

// view reads the DIG's state; ok false when the DIG does not exist.
func (d *digActor) view(ctx context.Context) (view, bool, error) {
	var v view
	found, err := d.c.read(ctx, d.dig()+"/state", &v)
	return v, found, err
}

// operate asks for op and follows it to its end: approving a rollout's waiting stage,
// sometimes stopping it. It answers whether the API took it.
func (d *digActor) operate(ctx context.Context, op string, body any) (bool, error) {
	before, _, err := d.view(ctx)
	if err != nil {
		return false, err
	}
	sent := time.Now()
	a := d.c.do("POST", d.dig()+"/"+op, body)
	for a.busy() && ctx.Err() == nil {
		d.r.pause(ctx)
		a = d.c.do("POST", d.dig()+"/"+op, body)
	}
	accepted := a.ok()
	if !accepted && !a.lost() {
		d.r.count("refused " + op)
		d.log("%s refused: %s", op, a)
		return false, nil
	}
	if accepted && op != "approve" {
		d.workflowOps++
	}
	// Follow the operation (or learn whether a lost request started one).
	stopAt, stopped, stopSent := -1, false, false
	if d.rnd.IntN(100) < d.r.cfg.StopPercent {
		stopAt = 1 + d.rnd.IntN(4)
	}
	for look := 0; ; look++ {
		v, _, err := d.view(ctx)
		if err != nil {
			if !accepted {
				d.unresolved++
			}
			return accepted, err
		}
		if !accepted {
			if len(v.History) == len(before.History) && !v.Running() {
				if op == "approve" {
					return false, nil // the api records an approval before it answers
				}
				late, err := d.r.startedLate(ctx, d.workflowID()+"/"+op+"/", sent)
				if err != nil || !late {
					if err != nil {
						d.unresolved++
					}
					return false, err // nothing started
				}
				d.log("%s: the lost request started it", op)
				if v, err = d.awaitRecorded(ctx, before); err != nil {
					return true, err
				}
			}
			accepted = true
			if a.code >= 500 {
				d.r.violation("a %d to %s of %s started it: %s", a.code, op, d.dig(), a)
			}
			if op != "approve" {
				d.workflowOps++
			}
		}
		if !v.Running() {
			d.r.count(op)
			if op != "approve" && d.onAgent(before) {
				d.r.countAgent(op)
				if stopSent {
					d.r.countAgent("stop")
				}
			}
			d.log("%s (answer %d) ended: %s revision %d %s, stop sent %v", op, a.code, v.State, v.Revision, v.ContextStatus, stopped)
			if strings.HasSuffix(v.ContextStatus, "Failed") {
				d.r.violation("%s of %s failed: %s %s", op, d.dig(), v.Error, d.failures(ctx))
			}
			d.agree(op, before, v, stopped)
			return true, nil
		}
		d.approveStage(v)
		if look == stopAt {
			stopped = true // even unanswered: a stop may have been carried out
			if a := d.c.do("POST", d.dig()+"/stop", nil); a.ok() {
				d.r.count("stop")
				stopSent = true
			}
		}
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// onAgent: the operation changes what the agent cluster holds, as far as the test knows:
// the revision it starts from or the one it deploys places apps there.
func (d *digActor) onAgent(before view) bool {
	var cfgs []config
	if c, ok := d.revs[before.ContextID]; ok && isDeployed(before.State) {
		cfgs = append(cfgs, c)
	}
	if d.pending != nil {
		cfgs = append(cfgs, *d.pending)
	}
	return slices.ContainsFunc(cfgs, func(c config) bool { return slices.Contains(c.Clusters, agentCluster) })
}

func (d *digActor) workflowID() string { return "dig/" + d.project + "/" + d.id + "/v1/dig" }

// awaitRecorded waits until an operation that started late shows in the DIG's status.
func (d *digActor) awaitRecorded(ctx context.Context, before view) (view, error) {
	for {
		v, _, err := d.view(ctx)
		if err != nil || len(v.History) > len(before.History) || v.Running() {
			return v, err
		}
		d.r.pause(ctx)
	}
}

// failures lists the objects the status shows Failed, with their errors: what the run's
// report needs to tell why an operation failed.
func (d *digActor) failures(ctx context.Context) []string {
	var s struct {
		Apps []struct {
			Name     string `json:"name"`
			Clusters []struct {
				Cluster   string `json:"cluster"`
				Resources []struct {
					Name           string `json:"name"`
					DeployedStatus string `json:"deployedStatus"`
					Error          string `json:"error"`
				} `json:"resources"`
			} `json:"clusters"`
		} `json:"apps"`
	}
	_, _ = d.c.read(ctx, d.dig()+"/status?status=deployed", &s)
	var out []string
	for _, a := range s.Apps {
		for _, cl := range a.Clusters {
			for _, r := range cl.Resources {
				if r.DeployedStatus == "Failed" {
					out = append(out, fmt.Sprintf("%s %s/%s: %s", cl.Cluster, a.Name, r.Name, r.Error))
				}
			}
		}
	}
	return out
}

// approveStage approves the rollout's stage that waits for an approval, if one does.
func (d *digActor) approveStage(v view) {
	if v.Rollout != nil && slices.ContainsFunc(v.Rollout.Stages, func(s apiclient.RolloutStage) bool { return s.State == "WaitingForApproval" }) {
		if a := d.c.do("POST", d.dig()+"/rollout/approve", nil); a.ok() {
			d.r.count("approve stage")
		}
	}
}

func isDeployed(state string) bool {
	return state == "Instantiated" || state == "InstantiateStopped" || state == "TerminateStopped"
}

// wantState is the state each operation records when it succeeds.
var wantState = map[string]string{"approve": "Approved", "instantiate": "Instantiated", "update": "Instantiated",
	"rollback": "Instantiated", "terminate": "Terminated"}

// agree checks that the status says what the operation did: its state, and for an update
// or a rollback the next revision (unless a stop may have cut it short).
func (d *digActor) agree(op string, before, after view, stopped bool) {
	if stopped && strings.HasSuffix(after.State, "Stopped") || strings.HasSuffix(after.ContextStatus, "Failed") {
		return
	}
	if want := wantState[op]; after.State != want {
		d.r.violation("%s of %s ended with the DIG %s, not %s", op, d.dig(), after.State, want)
	}
	if (op == "update" || op == "rollback") && !stopped && after.Revision != before.Revision+1 {
		d.r.violation("%s of %s: revision %d after %d", op, d.dig(), after.Revision, before.Revision)
	}
}

// step carries out one random valid action for the DIG's current state.
func (d *digActor) step(ctx context.Context) error {
	if !d.exists {
		d.stored.Clusters = d.pickClusters()
		if err := d.makeDIG(ctx); err != nil {
			return err
		}
		_, err := d.operate(ctx, "approve", nil)
		return err
	}
	v, found, err := d.view(ctx)
	if err != nil {
		return err
	}
	if !found {
		d.r.violation("DIG %s is gone", d.dig())
		d.exists = false
		return nil
	}
	if d.deleting && !v.Running() {
		if isDeployed(v.State) {
			_, err = d.operate(ctx, "terminate", nil)
			return err
		}
		return d.deleteDIG(ctx)
	}
	pick := d.rnd.IntN(100)
	switch v.State {
	case "Created":
		_, err = d.operate(ctx, "approve", nil)
	case "Approved":
		if pick < 85 {
			return d.deploy(ctx, "instantiate", nil)
		}
		return d.deleteDIG(ctx)
	case "Terminated":
		if pick < 60 {
			return d.deploy(ctx, "instantiate", nil)
		}
		return d.deleteDIG(ctx)
	case "InstantiateStopped", "TerminateStopped":
		_, err = d.operate(ctx, "terminate", nil)
	case "Instantiated":
		switch {
		case strings.HasSuffix(v.ContextStatus, "Failed"):
			_, err = d.operate(ctx, "terminate", nil)
		case pick < 30:
			d.stored.Gen++
			if err := d.putDIG(ctx); err != nil {
				return err
			}
			return d.deploy(ctx, "update", nil)
		case pick < 45:
			if err := d.newCharts(ctx); err != nil {
				return err
			}
			return d.deploy(ctx, "update", nil)
		case pick < 60:
			if err := d.movePlacement(ctx); err != nil {
				return err
			}
			return d.deploy(ctx, "update", nil)
		case pick < 75 && v.Revision > 1:
			to := 1 + d.rnd.Int64N(v.Revision-1)
			return d.deploy(ctx, "rollback", map[string]any{"spec": map[string]any{"revision": strconv.FormatInt(to, 10)}}, to)
		default:
			_, err = d.operate(ctx, "terminate", nil)
		}
	default:
		d.r.violation("DIG %s in an unexpected state %q", d.dig(), v.State)
	}
	return err
}

// deploy runs an operation that deploys a revision and records what that revision holds:
// the stored configuration, or for a rollback the configuration of the revision it returns to.
func (d *digActor) deploy(ctx context.Context, op string, body any, rollbackTo ...int64) error {
	before, _, err := d.view(ctx)
	if err != nil {
		return err
	}
	cfg := d.stored
	if len(rollbackTo) > 0 {
		// Revision numbers start again with each instantiate: the newest with the number.
		i := slices.IndexFunc(before.Revisions, func(r apiclient.Revision) bool { return r.Revision == rollbackTo[0] })
		old, ok := config{}, false
		if i >= 0 {
			old, ok = d.revs[before.Revisions[i].ContextID]
		}
		if !ok {
			cfg = config{Gen: -1} // unknown: the check says so if it is the final one
		} else {
			cfg = old
		}
	}
	d.pending, d.pendingFrom = &cfg, before.ContextID
	accepted, err := d.operate(ctx, op, body)
	if err != nil {
		return err // the chaos phase ended during it: settle records the revision
	}
	if !accepted {
		d.pending = nil
		return nil
	}
	v, _, err := d.view(ctx)
	if err != nil {
		return err
	}
	d.record(v)
	return nil
}

// record notes what the revision an operation just deployed holds.
func (d *digActor) record(v view) {
	if d.pending != nil && v.ContextID != d.pendingFrom && v.State == "Instantiated" && !strings.HasSuffix(v.ContextStatus, "Failed") {
		d.revs[v.ContextID] = *d.pending
		d.log("revision %d (context %s) holds %+v", v.Revision, v.ContextID, *d.pending)
	}
	d.pending = nil
}

func (d *digActor) putDIG(ctx context.Context) error {
	want := strconv.Itoa(d.stored.Gen)
	return d.put(ctx, d.dig(), func() answer { return d.c.do("PUT", d.dig(), res("dig", d.digSpec())) }, func() bool {
		var got struct {
			Spec struct {
				OverrideValues []struct {
					Values map[string]string `json:"values"`
				} `json:"overrideValues"`
			} `json:"spec"`
		}
		_, _ = d.c.read(ctx, d.dig(), &got)
		return len(got.Spec.OverrideValues) > 0 && got.Spec.OverrideValues[0].Values["gen"] == want
	})
}

func (d *digActor) newCharts(ctx context.Context) error {
	d.stored.Chart++
	for _, a := range appNames {
		path := d.ca() + "/apps/" + a
		if err := d.put(ctx, path, func() answer { return d.c.multipart("PUT", path, res(a, nil), chart(a, d.stored.Chart)) },
			func() bool { return false }); err != nil { // a lost PUT is sent again: it is idempotent
			return err
		}
	}
	return nil
}

func (d *digActor) movePlacement(ctx context.Context) error {
	d.stored.Clusters = d.pickClusters()
	for _, a := range appNames {
		path := d.dig() + "/generic-placement-intents/gpi/app-intents/" + a
		body := res(a, map[string]any{"app": a, "intent": d.placement(d.stored.Clusters)})
		if err := d.put(ctx, path, func() answer { return d.c.do("PUT", path, body) }, func() bool { return false }); err != nil {
			return err
		}
	}
	return nil
}

// settle ends what runs and leaves the DIG deployed or not, never stopped half-way.
func (d *digActor) settle(ctx context.Context) error {
	for ctx.Err() == nil {
		v, found, err := d.view(ctx)
		if err != nil || !found {
			return err
		}
		switch {
		case v.Running():
			d.approveStage(v)
			select {
			case <-ctx.Done():
				return fmt.Errorf("DIG %s: its operation did not end: %s", d.dig(), v.ContextStatus)
			case <-time.After(time.Second):
			}
		case d.pending != nil:
			d.record(v)
		case v.State == "InstantiateStopped" || v.State == "TerminateStopped" || strings.HasSuffix(v.ContextStatus, "Failed"):
			if _, err := d.operate(ctx, "terminate", nil); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return ctx.Err()
}
