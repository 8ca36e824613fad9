package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	snapshots "github.com/temco/temco/internal/core/snapshot"
	"github.com/temco/temco/internal/dev/testenv"
)

// beginningOps stands in for the lifecycle workflow as far as its begin goes: it records
// each operation's transition and takes the revision's snapshot, as BeginOperation does
// (activities/operation, whose own tests cover that it does), and keeps the requests.
type beginningOps struct {
	operations
	srv      *Server
	requests []lifecycle.OpRequest
}

func (o *beginningOps) Operate(ctx context.Context, t lifecycle.Target, req lifecycle.OpRequest) (lifecycle.OpAccepted, error) {
	_, _ = o.operations.Operate(ctx, t, req)
	o.requests = append(o.requests, req)
	var rev int64
	var source string
	_, err := digstate.Change(ctx, o.srv.Store, t.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		cur := info.Actions[len(info.Actions)-1]
		switch req.Op {
		case lifecycle.OpInstantiate:
			rev = 1
			return []lifecycle.Action{{State: lifecycle.StateInstantiated, ContextID: req.ContextID, Revision: 1}}, nil
		case lifecycle.OpTerminate:
			return []lifecycle.Action{{State: lifecycle.StateTerminated, ContextID: cur.ContextID, Revision: cur.Revision}}, nil
		}
		rev = info.LatestRevision() + 1
		if req.Op == lifecycle.OpRollback {
			source, _ = info.RevisionContext(req.Revision)
		}
		return []lifecycle.Action{{State: lifecycle.StateUpdated, ContextID: cur.ContextID, Revision: cur.Revision},
			{State: lifecycle.StateInstantiated, ContextID: req.ContextID, Revision: rev}}, nil
	})
	if err != nil || req.Op == lifecycle.OpTerminate {
		return lifecycle.OpAccepted{Op: req.Op}, err
	}
	r := snapshots.Revision{Revision: rev, ContextID: req.ContextID, Operation: req.Op, Time: time.Now().UTC()}
	if _, err := o.srv.snapshotStore().Take(ctx, o.srv.Store, t.ID(), r, source); err != nil {
		return lifecycle.OpAccepted{}, err
	}
	return lifecycle.OpAccepted{Op: req.Op, ContextID: req.ContextID, Revision: rev, WorkflowID: "wf"}, nil
}

// readyDIG completes tree's DIG so that it may be instantiated, with a second cluster to
// move an app to.
func readyDIG(t *testing.T, c *client) {
	t.Helper()
	c.multipart("POST", "/cluster-providers/cp1/clusters", res("c2", nil), []byte(testKubeconfig)).must(t, 201)
	c.do("POST", pDIG+"/intents", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1"}})).must(t, 201)
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof2", map[string]any{"app": "app2"}), testenv.Profile("replicas: 1\n")).must(t, 201)
	for _, app := range []string{"app1", "app2"} {
		c.do("POST", pGPI+"/app-intents", res(app, appIntentSpec(app))).must(t, 201)
	}
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
}

func snapshotClient(t *testing.T) (*client, *beginningOps) {
	ops := &beginningOps{}
	c := newClient(t, func(s *Server) { s.Ops, ops.srv = ops, s })
	tree(t, c)
	readyDIG(t, c)
	return c, ops
}

// listSnapshots answers "id:[revisions]" per snapshot, newest first.
func listSnapshots(t *testing.T, c *client) ([]snapshots.Summary, []string) {
	t.Helper()
	var list []snapshots.Summary
	c.do("GET", pDIG+"/snapshots", nil).must(t, http.StatusOK).json(t, &list)
	var out []string
	for _, s := range list {
		var revs []int64
		for _, r := range s.Revisions {
			revs = append(revs, r.Revision)
		}
		out = append(out, fmt.Sprintf("%s:%v", s.ID, revs))
	}
	return list, out
}

func moveApp1(t *testing.T, c *client, cluster string) {
	t.Helper()
	spec := map[string]any{"app": "app1", "intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": "cp1", "cluster": cluster}}}}
	c.do("PUT", pGPI+"/app-intents/app1", res("app1", spec)).must(t, http.StatusOK)
}

// An instantiate and an update around a change of a placement intent leave two
// snapshots, newest first, whose diff names that intent's changed field and nothing
// else; a snapshot's document is its id's content, with the charts as digests.
func TestSnapshotsOfAnInstantiateAndAnUpdateDiffByTheChangedIntent(t *testing.T) {
	c, _ := snapshotClient(t)
	c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)
	list, got := listSnapshots(t, c)
	if len(list) != 1 || !strings.HasSuffix(got[0], ":[1]") || list[0].Operation != lifecycle.OpInstantiate {
		t.Fatalf("snapshots after the instantiate: %v %+v", got, list)
	}
	a := list[0].ID
	moveApp1(t, c, "c2")
	var acc lifecycle.OpAccepted
	c.do("POST", pDIG+"/update", nil).must(t, http.StatusAccepted).json(t, &acc)
	list, got = listSnapshots(t, c)
	if len(list) != 2 || got[0] != list[0].ID+":[2]" || got[1] != a+":[1]" || list[0].Operation != lifecycle.OpUpdate {
		t.Fatalf("snapshots after the update: %v, want a new one of revision 2, then %s of revision 1", got, a)
	}
	b := list[0].ID

	var diff snapshotDiff
	c.do("GET", pDIG+"/snapshots/"+a+"/diff/"+b, nil).must(t, http.StatusOK).json(t, &diff)
	want := fmt.Sprintf("%s %s [{%s spec.intent.allOf[0].cluster changed c1 c2}]", a, b, pGPI+"/app-intents/app1")
	if g := fmt.Sprintf("%s %s %v", diff.From, diff.To, diff.Changes); g != want {
		t.Errorf("diff\n%s\nwant\n%s", g, want)
	}
	c.do("GET", pDIG+"/snapshots/"+b+"/diff/"+b, nil).must(t, http.StatusOK).json(t, &diff)
	if diff.Changes == nil || len(diff.Changes) != 0 {
		t.Errorf("a snapshot against itself: %+v, want no change (an empty list)", diff.Changes)
	}

	r := c.do("GET", pDIG+"/snapshots/"+b, nil).must(t, http.StatusOK)
	sum := sha256.Sum256(r.body)
	if id := hex.EncodeToString(sum[:])[:16]; id != b {
		t.Errorf("the document's digest begins %s, not with its id %s", id, b)
	}
	doc, err := snapshots.Parse(r.body)
	if err != nil {
		t.Fatal(err)
	}
	chart := sha256.Sum256(testChart)
	if app := doc.Resources[pCA+"/apps/app1"]; app.Blob != "sha256:"+hex.EncodeToString(chart[:]) {
		t.Errorf("app1 in the snapshot: %+v, want its chart's digest", app)
	}
	for _, id := range []string{pDIG, pDIG + "/intents/i1", pGPI, pCA, pCA + "/composite-profiles/cprof/profiles/prof2", pP + "/logical-clouds/lc1"} {
		if _, ok := doc.Resources[id]; !ok {
			t.Errorf("the snapshot lacks %s", id)
		}
	}
	if strings.Contains(string(r.body), "dGVzdC1rZXktU0VDUkVU") || strings.Contains(string(r.body), "replicas") {
		t.Errorf("the snapshot holds a credential or an archive's content:\n%s", r.body)
	}
}

// The same configuration has the same id: an update with nothing changed adds its
// revision to the running snapshot, and changing the intent back returns to the first.
func TestTheSameConfigurationKeepsItsSnapshot(t *testing.T) {
	c, _ := snapshotClient(t)
	c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)
	moveApp1(t, c, "c2")
	c.do("POST", pDIG+"/update", nil).must(t, http.StatusAccepted)
	c.do("POST", pDIG+"/update", nil).must(t, http.StatusAccepted) // nothing changed
	list, got := listSnapshots(t, c)
	if len(list) != 2 || !strings.HasSuffix(got[0], ":[2 3]") || !strings.HasSuffix(got[1], ":[1]") {
		t.Fatalf("snapshots after an update without change: %v, want revisions 2 and 3 on one", got)
	}
	a, b := list[1].ID, list[0].ID
	moveApp1(t, c, "c1")
	c.do("POST", pDIG+"/update", nil).must(t, http.StatusAccepted)
	if _, got = listSnapshots(t, c); len(got) != 2 || got[0] != a+":[1 4]" || got[1] != b+":[2 3]" {
		t.Errorf("snapshots after changing the intent back: %v, want %s with revisions 1 and 4 first", got, a)
	}
	// Pages, as every list has.
	var page []snapshots.Summary
	r := c.do("GET", pDIG+"/snapshots?limit=1", nil).must(t, http.StatusOK)
	if r.json(t, &page); len(page) != 1 || page[0].ID != a || r.hdr.Get(headerContinue) == "" {
		t.Fatalf("first page of one: %+v, %s %q", page, headerContinue, r.hdr.Get(headerContinue))
	}
	r = c.do("GET", pDIG+"/snapshots?limit=1&continue="+r.hdr.Get(headerContinue), nil).must(t, http.StatusOK)
	if r.json(t, &page); len(page) != 1 || page[0].ID != b || r.hdr.Get(headerContinue) != "" {
		t.Errorf("second and last page: %+v, %s %q", page, headerContinue, r.hdr.Get(headerContinue))
	}
}

// A rollback may name a snapshot: it returns to the newest revision of the current
// instance that snapshot produced, which then produced the rollback's revision too; a
// snapshot of earlier instances only, an unknown one, or a snapshot and a revision at
// once are refused, naming why.
func TestRollbackToASnapshot(t *testing.T) {
	c, ops := snapshotClient(t)
	c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)
	moveApp1(t, c, "c2")
	c.do("POST", pDIG+"/update", nil).must(t, http.StatusAccepted)
	c.do("POST", pDIG+"/update", nil).must(t, http.StatusAccepted)
	list, _ := listSnapshots(t, c)
	a, b := list[1].ID, list[0].ID

	c.do("POST", pDIG+"/rollback", map[string]any{"spec": map[string]any{"snapshot": b}}).must(t, http.StatusAccepted)
	if req := ops.requests[len(ops.requests)-1]; req.Op != lifecycle.OpRollback || req.Revision != 3 {
		t.Fatalf("rollback to snapshot %s asked for %+v, want revision 3 (its newest)", b, req)
	}
	c.do("POST", pDIG+"/rollback", map[string]any{"spec": map[string]any{"snapshot": a}}).must(t, http.StatusAccepted)
	if req := ops.requests[len(ops.requests)-1]; req.Revision != 1 {
		t.Fatalf("rollback to snapshot %s asked for revision %d, want 1", a, req.Revision)
	}
	if _, got := listSnapshots(t, c); len(got) != 2 || got[0] != a+":[1 5]" || got[1] != b+":[2 3 4]" {
		t.Errorf("snapshots after the rollbacks: %v, want each rollback's revision on the snapshot it returned to", got)
	}

	for _, tc := range []struct {
		name string
		body any
		code int
		says string
	}{
		{"both", map[string]any{"spec": map[string]any{"snapshot": a, "revision": "1"}}, http.StatusBadRequest, "give spec.revision or spec.snapshot, not both"},
		{"neither", map[string]any{"spec": map[string]any{}}, http.StatusBadRequest, "or name a snapshot in spec.snapshot"},
		{"unknown", map[string]any{"spec": map[string]any{"snapshot": "0123456789abcdef"}}, http.StatusNotFound, `has no snapshot "0123456789abcdef"`},
		{"malformed", map[string]any{"spec": map[string]any{"snapshot": "v1"}}, http.StatusNotFound, "a snapshot's id is 16 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m := c.do("POST", pDIG+"/rollback", tc.body).must(t, tc.code).message(t); !strings.Contains(m, tc.says) {
				t.Errorf("message %q does not say %q", m, tc.says)
			}
		})
	}

	// A new instance: revisions of the old one are not there to return to.
	c.do("POST", pDIG+"/terminate", nil).must(t, http.StatusAccepted)
	moveApp1(t, c, "c1") // the configuration of a again
	c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)
	m := c.do("POST", pDIG+"/rollback", map[string]any{"spec": map[string]any{"snapshot": b}}).must(t, http.StatusBadRequest).message(t)
	if want := "produced no revision of " + digName + "'s current instance (it produced revisions [2 3 4] of earlier instances)"; !strings.Contains(m, want) {
		t.Errorf("message %q\nwant it to say %q", m, want)
	}
	n := len(ops.requests)
	c.do("POST", pDIG+"/rollback", map[string]any{"spec": map[string]any{"snapshot": a}}).must(t, http.StatusAccepted)
	if len(ops.requests) != n+1 || ops.requests[n].Revision != 1 {
		t.Errorf("rollback to %s in the new instance asked for %+v, want its revision 1", a, ops.requests[n:])
	}
}

// Unknown snapshots and DIGs answer 404 naming what is missing; a deleted DIG's
// snapshots go with it.
func TestSnapshotsNotFound(t *testing.T) {
	c, ops := snapshotClient(t)
	c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)
	list, _ := listSnapshots(t, c)
	a := list[0].ID
	for _, tc := range []struct{ path, says string }{
		{pDIG + "/snapshots/0123456789abcdef", `has no snapshot "0123456789abcdef"`},
		{pDIG + "/snapshots/nope", "a snapshot's id is 16 hex digits"},
		{pDIG + "/snapshots/" + a + "/diff/0123456789abcdef", `has no snapshot "0123456789abcdef"`},
		{pDIG + "/snapshots/0123456789abcdef/diff/" + a, `has no snapshot "0123456789abcdef"`},
		{pCA + "/deployment-intent-groups/nodig/snapshots", `deployment intent group "nodig" not found`},
		{pCA + "/deployment-intent-groups/nodig/snapshots/" + a, `deployment intent group "nodig" not found`},
	} {
		if m := c.do("GET", tc.path, nil).must(t, http.StatusNotFound).message(t); !strings.Contains(m, tc.says) {
			t.Errorf("GET %s: %q does not say %q", tc.path, m, tc.says)
		}
	}

	dig2 := pCA + "/deployment-intent-groups/dig2"
	c.do("POST", pCA+"/deployment-intent-groups", res("dig2", digSpec())).must(t, http.StatusCreated)
	r := snapshots.Revision{Revision: 1, ContextID: "x", Operation: lifecycle.OpInstantiate, Time: time.Now().UTC()}
	if _, err := ops.srv.snapshotStore().Take(context.Background(), ops.srv.Store, dig2, r, ""); err != nil {
		t.Fatal(err)
	}
	var l []snapshots.Summary
	if c.do("GET", dig2+"/snapshots", nil).must(t, http.StatusOK).json(t, &l); len(l) != 1 {
		t.Fatalf("dig2's snapshots: %+v", l)
	}
	c.do("DELETE", dig2, nil).must(t, http.StatusNoContent)
	c.do("POST", pCA+"/deployment-intent-groups", res("dig2", digSpec())).must(t, http.StatusCreated)
	if c.do("GET", dig2+"/snapshots", nil).must(t, http.StatusOK).json(t, &l); len(l) != 0 {
		t.Errorf("a DIG created again under a deleted one's name lists its snapshots: %+v", l)
	}
}

// Snapshots are a project's: a tenant of another project reads none of them, one of the
// project reads them.
func TestSnapshotsAreTheProjects(t *testing.T) {
	iss := newIssuer(t)
	keyFile := filepath.Join(t.TempDir(), "issuer.pem")
	if err := os.WriteFile(keyFile, iss.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(context.Background(), auth.Config{Issuer: testIssuer, Audience: testAudience, PublicKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	ops := &beginningOps{}
	c := newClient(t, func(s *Server) { s.Auth, s.Ops, ops.srv = authn, ops, s })
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin)
	readyDIG(t, admin)
	admin.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)
	list, _ := listSnapshots(t, admin)
	if len(list) != 1 {
		t.Fatalf("snapshots: %+v", list)
	}
	paths := []string{pDIG + "/snapshots", pDIG + "/snapshots/" + list[0].ID, pDIG + "/snapshots/" + list[0].ID + "/diff/" + list[0].ID}
	other := c.as(iss.Token("eve", []string{"project:p2"}, nil))
	own := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	for _, p := range paths {
		if m := other.do("GET", p, nil).must(t, http.StatusForbidden).message(t); !strings.Contains(m, `project "p1" is not granted`) {
			t.Errorf("GET %s as another project's tenant: %q", p, m)
		}
		own.do("GET", p, nil).must(t, http.StatusOK)
	}
}
