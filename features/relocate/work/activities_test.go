package work

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/features/relocate/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

var dig = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

// newActivities stores a DIG in state, running context "c1" (status) with app web on
// local+c1 and local+c3, its placement intent gpi with web's app intent by label, and
// clusters c1, c2, c3 (c4 reached through GitOps).
func newActivities(t *testing.T, name, state, status string) *Activities {
	t.Helper()
	ctx := context.Background()
	db := testenv.Database(t, ferret, name)
	a := &Activities{}
	var err error
	if a.Store, err = store.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	if a.Contexts, err = appctx.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	docs := []*store.Doc{
		{ID: "/cluster-providers/local", Kind: model.KindClusterProvider, Name: "local", Body: `{"metadata":{"name":"local"},"spec":{}}`},
		{ID: dig.ID(), Kind: model.KindDIG, Name: "d", Body: `{"metadata":{"name":"d"},"spec":{}}`,
			State: digstate.Encode(lifecycle.StateInfo{Actions: []lifecycle.Action{{State: state, ContextID: "c1", Revision: 1}}})},
		{ID: dig.ID() + "/intents/i", Parent: dig.ID(), Kind: model.KindDIGIntent, Name: "i",
			Body: `{"metadata":{"name":"i"},"spec":{"intent":{"genericPlacementIntent":"gpi"}}}`},
		{ID: dig.ID() + "/generic-placement-intents/gpi", Parent: dig.ID(), Kind: model.KindGPI, Name: "gpi", Body: `{"metadata":{"name":"gpi"},"spec":{}}`},
		{ID: dig.ID() + "/generic-placement-intents/gpi/app-intents/web-placement", Parent: dig.ID() + "/generic-placement-intents/gpi",
			Kind: model.KindAppIntent, Name: "web-placement",
			Body: `{"metadata":{"name":"web-placement","description":"kept"},"spec":{"app":"web","intent":{"allOf":[{"clusterProvider":"local","clusterLabel":"edge"}]}}}`},
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		docs = append(docs, &store.Doc{ID: lifecycle.ClusterID("local+" + c), Kind: model.KindCluster, Name: c,
			Body: `{"metadata":{"name":"` + c + `"},"spec":{"gitOps":{}}}`})
	}
	docs = append(docs, &store.Doc{ID: lifecycle.ClusterID("local+c4"), Kind: model.KindCluster, Name: "c4",
		Body: `{"metadata":{"name":"c4"},"spec":{"gitOps":{"gitOpsType":"fluxcd"}}}`})
	for _, d := range docs {
		d.LooseRefs = true
		if err := a.Store.Create(ctx, d); err != nil {
			t.Fatalf("%s: %v", d.ID, err)
		}
	}
	if err := a.Contexts.Create(ctx, &appctx.Context{ID: "c1", DIG: dig.ID(), Instance: "c1", Revision: 1, Status: status}); err != nil {
		t.Fatal(err)
	}
	web := func(cluster string, live ...appctx.Live) *appctx.ClusterApp {
		return &appctx.ClusterApp{App: "web", Cluster: cluster, Live: live, Resources: []appctx.ResourceStatus{
			{Ref: appctx.Ref{Version: "v1", Kind: "ConfigMap", Name: "web-config"}, Status: lifecycle.ResApplied},
			{Ref: appctx.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web"}, Status: lifecycle.ResApplied}}}
	}
	ready := appctx.Live{State: appctx.LivePresent, Ready: true}
	if err := a.Contexts.PutPlacement(ctx, "c1", []*appctx.ClusterApp{
		web("local+c1", ready, ready), web("local+c3", ready, appctx.Live{State: appctx.LivePresent}),
	}, map[string]int{"local+c1": 0, "local+c3": 0}); err != nil {
		t.Fatal(err)
	}
	return a
}

func errType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		return appErr.Type()
	}
	return ""
}

func TestPlanRelocation(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "relocateplan", lifecycle.StateInstantiated, lifecycle.StatusInstantiated)
	req := flow.RelocateRequest{DIG: dig, App: "web", From: "local+c1", To: "local+c2"}
	plan, err := a.PlanRelocation(ctx, req)
	if err != nil || plan.ContextID != "c1" || !slices.Equal(plan.Clusters, []string{"local+c1", "local+c3"}) {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	for _, c := range []struct {
		change    func(*flow.RelocateRequest)
		typ, says string
	}{
		{func(r *flow.RelocateRequest) { r.App = "api" }, lifecycle.ErrInvalidInput, `has no app "api" in its running context c1`},
		{func(r *flow.RelocateRequest) { r.To = "local+c9" }, lifecycle.ErrInvalidInput, "cluster local+c9 is not registered"},
		{func(r *flow.RelocateRequest) { r.To = "local+c4" }, lifecycle.ErrInvalidInput, "reached through GitOps"},
		{func(r *flow.RelocateRequest) { r.DIG.DIG = "nope" }, lifecycle.ErrInvalidInput, "does not exist"},
	} {
		r := req
		c.change(&r)
		if _, err := a.PlanRelocation(ctx, r); errType(err) != c.typ || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want a %s saying %q", r, err, c.typ, c.says)
		}
	}
	for _, s := range []struct{ state, status string }{
		{lifecycle.StateInstantiated, lifecycle.StatusUpdateFailed}, {lifecycle.StateTerminated, lifecycle.StatusTerminated},
	} {
		b := newActivities(t, "relocateplan"+s.status, s.state, s.status)
		if _, err := b.PlanRelocation(ctx, req); errType(err) != lifecycle.ErrInvalidState {
			t.Errorf("%s with its context %s: %v, want %s", s.state, s.status, err, lifecycle.ErrInvalidState)
		}
	}
}

// The app's intent names its clusters explicitly; its metadata stays; writing it again
// changes nothing.
func TestPlaceAppPinsTheClusters(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "relocateplace", lifecycle.StateInstantiated, lifecycle.StatusInstantiated)
	in := flow.PlaceAppInput{DIG: dig, App: "web", Clusters: []string{"local+c2", "local+c3"}}
	for range 2 {
		if err := a.PlaceApp(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	d, err := a.Store.Get(ctx, dig.ID()+"/generic-placement-intents/gpi/app-intents/web-placement")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"name":"web-placement","description":"kept","userData1":"","userData2":""},"spec":{"app":"web","intent":{"allOf":[` +
		`{"clusterProvider":"local","cluster":"c2"},{"clusterProvider":"local","cluster":"c3"}]}}}`
	if d.Body != want || d.Rev != 2 {
		t.Errorf("app intent (rev %d):\n%s\nwant\n%s", d.Rev, d.Body, want)
	}
	if err := a.PlaceApp(ctx, flow.PlaceAppInput{DIG: dig, App: "api", Clusters: in.Clusters}); errType(err) != lifecycle.ErrInvalidInput ||
		!strings.Contains(err.Error(), `app "api" has 0 app intents`) {
		t.Errorf("an app without intent: %v", err)
	}
}

// What the last read found: web is Ready on c1, its Deployment not Ready on c3.
func TestNotReadyNamesTheObjects(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "relocateready", lifecycle.StateInstantiated, lifecycle.StatusInstantiated)
	in := flow.AwaitAppReadyInput{DIG: dig, ContextID: "c1", App: "web"}
	for cluster, want := range map[string][]string{"local+c1": nil, "local+c3": {"Deployment/web not Ready"}} {
		in.Cluster = cluster
		if got, err := a.notReady(ctx, in); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", cluster, got, err, want)
		}
	}
	in.Cluster = "local+c2"
	if _, err := a.notReady(ctx, in); errType(err) != lifecycle.ErrInvalidState {
		t.Errorf("a cluster without the app: %v", err)
	}
}
