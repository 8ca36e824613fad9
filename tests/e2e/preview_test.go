package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// A rollout preview of an instantiated DIG with a two-stage strategy, after its override
// values and placements changed, lists per stage the clusters the update would change and
// what (a Deployment changed, an app added, a cluster dropped with everything on it), and
// changes nothing: the live objects, the DIG's state and revision stay as they were, and
// its scratch context is gone.
func TestRolloutPreview(t *testing.T) {
	d := newDeployment(t,
		app{name: "web", chart: webChart("web"), placement: onEveryCluster()},
		app{name: "api", chart: webChart("api"), placement: clusterNamed("cluster1")},
	)
	d.create()
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "canary", "clusters": []string{"cluster1"}},
		map[string]any{"name": "rest"},
	}})

	// Before the instantiate, the preview shows it: everything added.
	pre := d.preview("")
	if pre.Op != lifecycle.OpInstantiate || pre.Revision != 1 || pre.Strategy != "rings" || len(pre.Stages) != 2 ||
		pre.Totals != (flow.PreviewCounts{Clusters: 3, Changing: 3, Added: 12}) {
		t.Fatalf("preview of the instantiate: %s", pretty(pre))
	}
	recordHistory(t, pre.WorkflowID, "PreviewRollout-instantiate")

	first := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	// Change the DIG: web gets 3 replicas and leaves cluster3, api joins cluster2.
	d.c.do("PUT", d.dig(), res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": d.logicalCloud,
		"overrideValues": []any{map[string]any{"app": "web", "values": map[string]string{"replicas": "3"}}}})).must(t, 200)
	both := map[string]any{"allOf": []any{map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": "cluster2"}}}
	for _, a := range []string{"web", "api"} {
		d.c.do("PUT", d.dig()+"/generic-placement-intents/gpi/app-intents/"+a+"-placement",
			res(a+"-placement", map[string]any{"app": a, "intent": both})).must(t, 200)
	}
	before := snapshot(t, first.ContextID, "web", "api")
	if len(before) != 12 {
		t.Fatalf("live objects before the preview: %v", keys(before))
	}
	statusBefore := d.status("")

	p := d.preview("")
	if p.Op != lifecycle.OpUpdate || p.CurrentRevision != 1 || p.Revision != 2 || p.Strategy != "rings" || p.Limit != 100 {
		t.Errorf("preview: %s", pretty(p))
	}
	want := []flow.PreviewStage{
		{Name: "canary", Clusters: []flow.ClusterPreview{{Cluster: "local+cluster1", Added: []string{},
			Changed: []string{"Deployment/default/web"}, Removed: []string{}, Same: 5}},
			Counts: flow.PreviewCounts{Clusters: 1, Changing: 1, Changed: 1, Unchanged: 5}},
		{Name: "rest", Clusters: []flow.ClusterPreview{{Cluster: "local+cluster2",
			Added:   []string{"ConfigMap/default/api-config", "Deployment/default/api", "Service/default/api"},
			Changed: []string{"Deployment/default/web"}, Removed: []string{}, Same: 2}},
			Counts: flow.PreviewCounts{Clusters: 1, Changing: 1, Added: 3, Changed: 1, Unchanged: 2}},
		{Name: flow.PreviewRemovedStage, Removed: true, Clusters: []flow.ClusterPreview{{Cluster: "local+cluster3",
			Added: []string{}, Changed: []string{},
			Removed: []string{"ConfigMap/default/web-config", "Deployment/default/web", "Service/default/web"}, Dropped: true}},
			Counts: flow.PreviewCounts{Clusters: 1, Changing: 1, Removed: 3}},
	}
	if pretty(p.Stages) != pretty(want) {
		t.Errorf("stages:\n%s\nwant\n%s", pretty(p.Stages), pretty(want))
	}
	if p.Totals != (flow.PreviewCounts{Clusters: 3, Changing: 3, Added: 3, Changed: 2, Removed: 3, Unchanged: 7}) {
		t.Errorf("totals %+v", p.Totals)
	}
	recordHistory(t, p.WorkflowID, "PreviewRollout-update-two-stages")

	// limit=0: counts only.
	counts := d.preview("?limit=0")
	for i, st := range counts.Stages {
		if len(st.Clusters) != 0 || st.More != 1 || st.Counts != want[i].Counts {
			t.Errorf("limit=0, stage %s: %s", st.Name, pretty(st))
		}
	}

	// A rollback to revision 1 changes nothing: it is what runs.
	back := d.previewBody(map[string]any{"revision": 1})
	if back.Op != lifecycle.OpRollback || back.Totals != (flow.PreviewCounts{Clusters: 3, Unchanged: 12}) {
		t.Errorf("preview of a rollback to revision 1: %s", pretty(back))
	}
	recordHistory(t, back.WorkflowID, "PreviewRollout-rollback")

	// Nothing changed: the live objects, the DIG's history, its contexts.
	if changed := changedKeys(before, snapshot(t, first.ContextID, "web", "api")); len(changed) > 0 {
		t.Errorf("the previews changed live objects: %v", changed)
	}
	after := d.status("")
	if after.Instance != first.ContextID || after.Status != lifecycle.StatusInstantiated ||
		pretty(after.States.Actions) != pretty(statusBefore.States.Actions) {
		t.Errorf("the DIG's status changed:\n%s\nwas\n%s", pretty(after.States), pretty(statusBefore.States))
	}
	if n := previewContexts(t, d); n != 0 {
		t.Errorf("%d scratch contexts left", n)
	}

	// A strategy that leaves a cluster in no stage is refused, naming it.
	d.c.do("PUT", d.dig()+"/rollout-strategies/rings", res("rings", map[string]any{"stages": []any{
		map[string]any{"name": "canary", "clusters": []string{"cluster1"}}}})).must(t, 200)
	m := d.c.do("POST", d.dig()+"/rollout-preview", nil).must(t, 409)
	var msg struct{ Message string }
	m.json(t, &msg)
	if want := `rollout strategy "rings": no stage selects cluster(s) local+cluster2`; !strings.Contains(msg.Message, want) {
		t.Errorf("message %q does not say %q", msg.Message, want)
	}
	if n := previewContexts(t, d); n != 0 {
		t.Errorf("%d scratch contexts left after a refused preview", n)
	}
	failed := runsOf(t, fmt.Sprintf(`project = %q AND operation = %q AND ExecutionStatus = "Failed"`, d.project, flow.OpPreview))
	if len(failed) != 1 {
		t.Fatalf("failed preview runs: %v", failed)
	}
	recordHistory(t, failed[0], "PreviewRollout-refused-strategy")
}

func (d *deployment) preview(query string) flow.RolloutPreview {
	d.t.Helper()
	var p flow.RolloutPreview
	d.c.do("POST", d.dig()+"/rollout-preview"+query, nil).must(d.t, 200).json(d.t, &p)
	return p
}

func (d *deployment) previewBody(body any) flow.RolloutPreview {
	d.t.Helper()
	var p flow.RolloutPreview
	d.c.do("POST", d.dig()+"/rollout-preview", body).must(d.t, 200).json(d.t, &p)
	return p
}

// previewContexts counts the DIG's scratch contexts in the store.
func previewContexts(t *testing.T, d *deployment) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mc, err := mongo.Connect(options.Client().ApplyURI(stack.Mongo.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mc.Disconnect(context.Background()) }()
	n, err := mc.Database("temco").Collection("contexts").CountDocuments(ctx,
		bson.D{{Key: "dig", Value: d.ref().ID()}, {Key: "op", Value: flow.OpPreview}})
	if err != nil {
		t.Fatal(fmt.Errorf("count scratch contexts: %w", err))
	}
	return n
}
