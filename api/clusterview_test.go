package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/health"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// A cluster's view: each DIG placed there with its apps' cells, the cluster's state by
// DIG and the newest error an object met there; a tenant sees its own DIGs only.
func TestClusterViewShowsWhatRunsThere(t *testing.T) {
	iss := newIssuer(t)
	reads := &liveReads{}
	c := authClient(t, iss, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin)
	admin.multipart("POST", "/cluster-providers/cp1/clusters", res("c2", nil), []byte(testKubeconfig)).must(t, 201)
	admin.do("POST", "/cluster-providers/cp1/clusters/c2/labels", map[string]any{"clusterLabel": "edge"}).must(t, 201)
	failed := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	retrying := res3("Applied", "Retrying", "Failed")
	retrying[1].Attempts, retrying[1].Error, retrying[1].Updated = 3, "dial tcp: connection refused", failed
	retrying[2].Error, retrying[2].Updated = "the object is invalid", failed.Add(time.Minute)
	instantiated(t, admin, reads, pDIG, "ctx-1", map[string][]appctx.Object{"app1": {}, "app2": {}}, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied", "Applied", "Applied")},
		{App: "app1", Cluster: "cp1+c2", Resources: retrying},
		{App: "app2", Cluster: "cp1+c2", Resources: res3("Applied")},
	})

	view := func(as *client, cluster string) (v clusterView) { // a fresh answer each: decoding merges maps
		as.do("GET", "/cluster-providers/cp1/clusters/"+cluster+"/dashboard", nil).must(t, 200).json(t, &v)
		return v
	}
	v := view(admin, "c2")
	if v.ClusterProvider != "cp1" || v.Cluster != "c2" || !slices.Equal(v.Labels, []string{"edge"}) || len(v.DIGs) != 1 || v.States["Failed"] != 1 {
		t.Fatalf("c2: %+v", v)
	}
	d := v.DIGs[0]
	if d.Project != "p1" || d.Name != "dig1" || d.DIGState != "Instantiated" || d.ContextStatus != "Instantiated" || d.State != "Failed" ||
		d.Apps["app1"].State != "Failed" || d.Apps["app2"].State != "Applied" || d.Retry == nil || d.Retry.Attempts != 3 {
		t.Errorf("dig1 on c2: %+v", d)
	}
	if e := v.LastError; e == nil || e.Error != "the object is invalid" || e.Status != "Failed" || e.App != "app1" || e.DIG != "/v2"+pDIG ||
		!strings.Contains(e.Object, "web-cfg") {
		t.Errorf("last error %+v", v.LastError)
	}
	v = view(admin, "c1")
	if len(v.DIGs) != 1 || v.DIGs[0].State != "Applied" || v.LastError != nil || v.States["Applied"] != 1 {
		t.Errorf("c1: %+v", v)
	}
	if m := admin.do("GET", "/cluster-providers/cp1/clusters/nope/dashboard", nil).must(t, 404).message(t); !strings.Contains(m, "nope") {
		t.Errorf("a cluster that does not exist: %q", m)
	}

	// What dig1's capacity placement last read of c2, and made of it.
	// (The placement's routes are features/autoscale's: stored here as they store it.)
	at := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	state, _ := json.Marshal(lifecycle.AutoscaleState{
		Members: []capacity.Member{{Cluster: "cp1+c2", State: capacity.Active, Since: at, Added: at, Reason: "placed by the DIG's operation"}},
		Last:    &lifecycle.Evaluation{At: at, Signals: map[string]capacity.Signals{"cp1+c2": {Reachable: true, Unschedulable: 2}}},
	})
	body, _ := json.Marshal(res("fleet", map[string]any{"maxClusters": 2}))
	doc := &store.Doc{ID: pDIG + "/capacity-placements/fleet", Parent: pDIG, Scope: "/projects/p1", Kind: model.KindCapacityPlacement,
		Name: "fleet", Body: string(body)}
	if err := c.store.Create(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	doc.State = string(state)
	if err := c.store.SetState(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	v = view(admin, "c2")
	if cp := v.DIGs[0].Capacity; cp == nil || cp.Placement != "fleet" || cp.State != capacity.Active || cp.Signals == nil || cp.Signals.Unschedulable != 2 ||
		cp.Read == nil || !cp.Read.Equal(at) || cp.Reason == "" {
		t.Errorf("dig1's capacity on c2: %+v", cp)
	}
	if v := view(admin, "c1"); v.DIGs[0].Capacity != nil {
		t.Errorf("dig1's capacity on c1, which its autoscaler has not read: %+v", v.DIGs[0].Capacity)
	}

	alice := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	v = view(alice, "c2")
	if len(v.DIGs) != 1 {
		t.Errorf("alice, of p1, sees %+v", v.DIGs)
	}
	bob := c.as(iss.Token("bob", []string{"project:p2"}, nil))
	v = view(bob, "c2")
	if len(v.DIGs) != 0 || v.LastError != nil || len(v.States) != 0 {
		t.Errorf("bob, of p2, sees p1's DIG on the cluster: %+v", v)
	}
	c.do("GET", "/cluster-providers/cp1/clusters/c2/dashboard", nil).must(t, http.StatusUnauthorized)
}

// The view and the fleet say what the cluster probes found: Unknown before any, the state
// and since when after; the probe's error (it names the cluster's API server) to
// administrators only.
func TestClusterViewAndFleetShowReachability(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin)
	admin.multipart("POST", "/cluster-providers/cp1/clusters", res("c2", nil), []byte(testKubeconfig)).must(t, 201)
	view := func(as *client, cluster string) (v clusterView) {
		as.do("GET", "/cluster-providers/cp1/clusters/"+cluster+"/dashboard", nil).must(t, 200).json(t, &v)
		return v
	}
	if r := view(admin, "c1").Reachability; r.State != health.Unknown || r.Since != nil {
		t.Errorf("c1 never probed: %+v", r)
	}
	ctx := context.Background()
	probes := health.Open(c.store.Database())
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	if err := probes.Save(ctx, []health.Cluster{{Key: "cp1+c1", State: health.Reachable, Since: at},
		{Key: "cp1+c2", State: health.Unreachable, Error: `Get "https://10.1.2.3:6443/readyz": connection refused`, Since: at}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := probes.Round(ctx, at); err != nil {
		t.Fatal(err)
	}
	r := view(admin, "c2").Reachability
	if r.State != health.Unreachable || !strings.Contains(r.Error, "connection refused") || r.Since == nil || !r.Since.Equal(at) || r.Checked == nil {
		t.Errorf("c2 to an admin: %+v", r)
	}
	alice := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	if r := view(alice, "c2").Reachability; r.State != health.Unreachable || r.Error != "" {
		t.Errorf("c2 to a tenant: %+v (no error: it names the API server)", r)
	}
	var f fleetAnswer
	alice.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if f.Summary.Clusters[health.Reachable] != 1 || f.Summary.Clusters[health.Unreachable] != 1 {
		t.Errorf("the fleet's clusters by reachability: %v", f.Summary.Clusters)
	}
}
