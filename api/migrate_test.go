package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/starter"
)

func (o *operations) Migrate(_ context.Context, t lifecycle.Target, req lifecycle.MigrateRequest) (lifecycle.OpAccepted, error) {
	o.started = append(o.started, "migrate "+req.Origin.ID()+" to "+t.ID())
	return lifecycle.OpAccepted{Op: lifecycle.OpMigrate, WorkflowID: t.OpWorkflowID(lifecycle.OpMigrate, req.ContextID),
		ContextID: req.ContextID, Revision: 1}, nil
}

// busyOps refuses every migrate, as a lifecycle workflow running something else does.
type busyOps struct{ operations }

func (b *busyOps) Migrate(context.Context, lifecycle.Target, lifecycle.MigrateRequest) (lifecycle.OpAccepted, error) {
	return lifecycle.OpAccepted{}, &starter.Refused{Message: "dig1 cannot migrate: update is running"}
}

const (
	pCA2  = pP + "/composite-apps/ca/v2"
	pDIG2 = pCA2 + "/deployment-intent-groups/dig2"
)

// migrateTarget adds version v2 of the composite app with one app and DIG dig2, ready to
// be instantiated.
func migrateTarget(t *testing.T, c *client) {
	t.Helper()
	c.do("POST", pP+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v2"})).must(t, 201)
	c.multipart("POST", pCA2+"/apps", res("app1", nil), testChart).must(t, 201)
	c.do("POST", pCA2+"/composite-profiles", res("cprof", nil)).must(t, 201)
	c.multipart("POST", pCA2+"/composite-profiles/cprof/profiles", res("prof1", map[string]any{"app": "app1"}),
		testenv.Profile("replicas: 2\n")).must(t, 201)
	c.do("POST", pCA2+"/deployment-intent-groups", res("dig2", digSpec())).must(t, 201)
	c.do("POST", pDIG2+"/generic-placement-intents", res("gpi1", nil)).must(t, 201)
	c.do("POST", pDIG2+"/generic-placement-intents/gpi1/app-intents", res("a1", appIntentSpec("app1"))).must(t, 201)
	c.do("POST", pDIG2+"/intents", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1"}})).must(t, 201)
}

func migrateBodyTo(version, dig string) map[string]any {
	return map[string]any{"metadata": map[string]any{"description": "to v2"},
		"spec": map[string]any{"targetCompositeAppVersion": version, "targetDeploymentIntentGroup": dig}}
}

// A malformed body is a 400 naming what is wrong, and nothing starts.
func TestMigrateRefusesABadBody(t *testing.T) {
	c, srv, ops := lifecycleClient(t)
	migrateTarget(t, c)
	record(t, srv, pDIG, lifecycle.StateInstantiated, "ctx-1", lifecycle.StatusInstantiated)
	for _, tc := range []struct {
		body any
		want string
	}{
		{nil, "request body is empty: a JSON object is required"},
		{"{", "request body is not valid JSON"},
		{map[string]any{"spec": map[string]any{"targetDeploymentIntentGroup": "dig2"}}, "spec.targetCompositeAppVersion is required"},
		{map[string]any{"spec": map[string]any{"targetCompositeAppVersion": "v2"}}, "spec.targetDeploymentIntentGroup is required"},
		{migrateBodyTo("v 2", "dig2"), `spec.targetCompositeAppVersion "v 2" is invalid`},
		{migrateBodyTo("v2", "-dig2"), `spec.targetDeploymentIntentGroup "-dig2" is invalid`},
		{map[string]any{"spec": map[string]any{"targetCompositeAppVersion": 2, "targetDeploymentIntentGroup": "dig2"}}, "spec.targetCompositeAppVersion"},
		{map[string]any{"metadata": map[string]any{"description": strings.Repeat("x", 1025)}, "spec": map[string]any{
			"targetCompositeAppVersion": "v2", "targetDeploymentIntentGroup": "dig2"}}, "metadata.description is longer than 1024 characters"},
		{migrateBodyTo("v1", "dig1"), "the target of a migrate is the DIG itself"},
	} {
		if m := c.do("POST", pDIG+"/migrate", tc.body).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, tc.want) {
			t.Errorf("body %v: message %q, want it to say %q", tc.body, m, tc.want)
		}
	}
	if len(ops.started) != 0 {
		t.Errorf("operations started: %v", ops.started)
	}
}

// A target that does not exist is a 404; states that do not allow the migrate, on either
// side, and a target missing a part are 409s, all before anything is built.
func TestMigrateChecksBothDIGsFirst(t *testing.T) {
	c, srv, ops := lifecycleClient(t)
	migrateTarget(t, c)
	const target = `deployment intent group "dig2" (project "p1", composite app "ca" "v2")`
	if m := c.do("POST", pDIG+"/migrate", migrateBodyTo("v2", "nope")).must(t, http.StatusNotFound).message(t); m !=
		`the migrate's target, deployment intent group "nope" (project "p1", composite app "ca" "v2"), does not exist` {
		t.Errorf("missing target: %q", m)
	}
	c.do("POST", pDIG+"/migrate", migrateBodyTo("v9", "dig2")).must(t, http.StatusNotFound)
	c.do("POST", pCA+"/deployment-intent-groups/nope/migrate", migrateBodyTo("v2", "dig2")).must(t, http.StatusNotFound)

	refused(t, c.do("POST", pDIG+"/migrate", migrateBodyTo("v2", "dig2")),
		digName+" is Created: migrate needs one of [Instantiated InstantiateStopped]")
	record(t, srv, pDIG, lifecycle.StateInstantiated, "ctx-1", lifecycle.StatusInstantiated)
	refused(t, c.do("POST", pDIG+"/migrate", migrateBodyTo("v2", "dig2")), target+" is Created: migrate into needs one of [Approved]")
	c.do("POST", pDIG2+"/approve", nil).must(t, http.StatusAccepted)
	c.do("DELETE", pDIG2+"/intents/i1", nil).must(t, http.StatusNoContent)
	c.do("POST", pDIG2+"/approve", nil).must(t, http.StatusAccepted)
	if m := c.do("POST", pDIG+"/migrate", migrateBodyTo("v2", "dig2")).must(t, http.StatusConflict).message(t); !strings.Contains(m,
		target+" cannot be instantiated yet: no intents of the DIG name a genericPlacementIntent") {
		t.Errorf("target without intents: %q", m)
	}
	record(t, srv, pDIG2, lifecycle.StateInstantiated, "ctx-2", lifecycle.StatusInstantiated)
	refused(t, c.do("POST", pDIG+"/migrate", migrateBodyTo("v2", "dig2")), target+" is Instantiated: migrate into needs one of [Approved]")
	if len(ops.started) != 0 {
		t.Errorf("operations started: %v", ops.started)
	}
}

// A migrate from an Instantiated or InstantiateStopped DIG to an Approved one is asked of
// the target and answered 202 with the accepted operation.
func TestMigrateStartsOnTheTarget(t *testing.T) {
	for _, from := range []string{lifecycle.StateInstantiated, lifecycle.StateInstantiateStopped} {
		t.Run(from, func(t *testing.T) {
			c, srv, ops := lifecycleClient(t)
			migrateTarget(t, c)
			record(t, srv, pDIG, from, "ctx-1", lifecycle.StatusInstantiated)
			c.do("POST", pDIG2+"/approve", nil).must(t, http.StatusAccepted)
			var acc lifecycle.OpAccepted
			c.do("POST", pDIG+"/migrate", migrateBodyTo("v2", "dig2")).must(t, http.StatusAccepted).json(t, &acc)
			target := lifecycle.Target{Project: "p1", CompositeApp: "ca", Version: "v2", DIG: "dig2"}
			if acc.Op != lifecycle.OpMigrate || acc.ContextID == "" || acc.WorkflowID != target.OpWorkflowID(lifecycle.OpMigrate, acc.ContextID) {
				t.Errorf("accepted %+v", acc)
			}
			if len(ops.started) != 1 || ops.started[0] != "migrate "+pDIG+" to "+pDIG2 {
				t.Errorf("operations started: %v", ops.started)
			}
		})
	}
}

// A lifecycle workflow's refusal (either DIG busy) is a 409 with its message.
func TestMigrateRefusedByABusyDIG(t *testing.T) {
	ops := &busyOps{}
	var srv *Server
	c := newClient(t, func(s *Server) { s.Ops, srv = ops, s })
	tree(t, c)
	migrateTarget(t, c)
	record(t, srv, pDIG, lifecycle.StateInstantiated, "ctx-1", lifecycle.StatusInstantiated)
	c.do("POST", pDIG2+"/approve", nil).must(t, http.StatusAccepted)
	refused(t, c.do("POST", pDIG+"/migrate", migrateBodyTo("v2", "dig2")), "dig1 cannot migrate: update is running")
}
