package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/temco/temco/internal/core/appctx"
)

// gridRows renders an answer's clusters as "provider/name state digs", in its order.
func (f fleetClusters) rows() []string {
	var out []string
	for i, n := range f.Clusters.Name {
		out = append(out, fmt.Sprintf("%s/%s %s %d", f.Providers[f.Clusters.Provider[i]], n, f.States[f.Clusters.State[i]], f.Clusters.DIGs[i]))
	}
	return out
}

// The grid: every registered cluster with the worst state of the DIGs placed there and
// how many are, from counted batches (with and without the clusters of each state
// recorded) and a batch still running alike; a tenant's counts its projects' DIGs alone.
func TestFleetClustersGrid(t *testing.T) {
	iss := newIssuer(t)
	reads := &liveReads{}
	c := authClient(t, iss, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin)
	for _, n := range []string{"c2", "c3", "c4", "c5"} {
		admin.multipart("POST", "/cluster-providers/cp1/clusters", res(n, nil), []byte(testKubeconfig)).must(t, 201)
	}
	admin.do("POST", "/cluster-providers", res("cp2", nil)).must(t, 201)
	admin.multipart("POST", "/cluster-providers/cp2/clusters", res("x1", nil), []byte(testKubeconfig)).must(t, 201)
	admin.do("POST", pCA+"/deployment-intent-groups", res("dig2", digSpec())).must(t, 201)
	admin.do("POST", "/projects", res("p2", nil)).must(t, http.StatusCreated)
	admin.do("POST", "/projects/p2/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	other := "/projects/p2/composite-apps/ca/v1/deployment-intent-groups/other"
	admin.do("POST", "/projects/p2/composite-apps/ca/v1/deployment-intent-groups", res("other", map[string]any{"compositeProfile": "prof", "version": "1", "logicalCloud": "lc"})).must(t, 201)
	// A DIG of p2 never instantiated: it counts in no cluster.
	admin.do("POST", "/projects/p2/composite-apps/ca/v1/deployment-intent-groups", res("idle", map[string]any{"compositeProfile": "prof", "version": "1", "logicalCloud": "lc"})).must(t, 201)

	ctx := context.Background()
	apps := map[string][]appctx.Object{"app1": {}}
	// dig1: counted, its clusters of each state but the commonest recorded.
	instantiated(t, admin, reads, pDIG, "ctx-1", apps, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied", "Applied", "Applied")},
		{App: "app1", Cluster: "cp1+c2", Resources: res3("Applied", "Retrying", "Pending")},
		{App: "app1", Cluster: "cp1+c3", Resources: res3("Applied", "Applied", "Applied")},
	})
	if err := reads.contexts.CountBatch(ctx, "ctx-1", 0); err != nil {
		t.Fatal(err)
	}
	// dig2: running (its batch not counted).
	instantiated(t, admin, reads, pCA+"/deployment-intent-groups/dig2", "ctx-2", apps, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied", "Failed", "Applied")},
		{App: "app1", Cluster: "cp1+c2", Resources: res3("Pending", "Pending", "Pending")},
	})
	// other: counted before the clusters of each state were recorded; its objects on c3
	// all deleted.
	instantiated(t, admin, reads, other, "ctx-9", apps, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c3", Resources: res3("Deleted", "Deleted", "Deleted")},
		{App: "app1", Cluster: "cp1+c4", Resources: res3("Applied", "Applied", "Applied")},
		{App: "app1", Cluster: "cp2+x1", Resources: res3("Applied", "Pending", "Applied")},
	})
	if err := reads.contexts.CountBatch(ctx, "ctx-9", 0); err != nil {
		t.Fatal(err)
	}
	var b struct {
		Others map[string][]string `bson:"others"`
	}
	batches := c.store.Database().Collection("ctxbatches")
	if err := batches.FindOne(ctx, bson.D{{Key: "ctx", Value: "ctx-1"}}).Decode(&b); err != nil ||
		!slices.Equal(b.Others["Retrying"], []string{"cp1+c2"}) || len(b.Others) != 1 {
		t.Fatalf("ctx-1's batch records %v (%v), want only cp1+c2 Retrying", b.Others, err)
	}
	if _, err := batches.UpdateOne(ctx, bson.D{{Key: "ctx", Value: "ctx-9"}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "others", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}

	var f fleetClusters
	admin.do("GET", "/fleet/clusters", nil).must(t, 200).json(t, &f)
	want := []string{"cp1/c1 Failed 2", "cp1/c2 Retrying 2", "cp1/c3 Applied 1", "cp1/c4 Applied 1", "cp1/c5 none 0", "cp2/x1 Pending 1"}
	if !slices.Equal(f.rows(), want) || f.Total != 6 || f.DIGs != 3 {
		t.Errorf("the admin's grid: %q (total %d, digs %d), want %q", f.rows(), f.Total, f.DIGs, want)
	}
	if want := map[string]int{"Failed": 1, "Retrying": 1, "Pending": 1, "Applied": 2, "none": 1}; !maps.Equal(f.Counts, want) {
		t.Errorf("the admin's counts %v, want %v", f.Counts, want)
	}
	if !slices.Equal(f.States, []string{"Failed", "Retrying", "Pending", "Applied", "none"}) {
		t.Errorf("states %q", f.States)
	}

	for query, want := range map[string][]string{
		"?state=Applied":            {"cp1/c3 Applied 1", "cp1/c4 Applied 1"},
		"?state=none":               {"cp1/c5 none 0"},
		"?provider=cp2":             {"cp2/x1 Pending 1"},
		"?placed=true&provider=cp1": {"cp1/c1 Failed 2", "cp1/c2 Retrying 2", "cp1/c3 Applied 1", "cp1/c4 Applied 1"},
		"?state=Failed&placed=true": {"cp1/c1 Failed 2"},
	} {
		admin.do("GET", "/fleet/clusters"+query, nil).must(t, 200).json(t, &f)
		if !slices.Equal(f.rows(), want) {
			t.Errorf("%s: %q, want %q", query, f.rows(), want)
		}
	}
	admin.do("GET", "/fleet/clusters?state=Applied", nil).must(t, 200).json(t, &f)
	if f.Counts["Failed"] != 1 || f.Total != 6 {
		t.Errorf("a state filter narrows the counts: %v, total %d", f.Counts, f.Total)
	}

	// alice (p1): every cluster, counting dig1 and dig2 alone.
	alice := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	alice.do("GET", "/fleet/clusters", nil).must(t, 200).json(t, &f)
	want = []string{"cp1/c1 Failed 2", "cp1/c2 Retrying 2", "cp1/c3 Applied 1", "cp1/c4 none 0", "cp1/c5 none 0", "cp2/x1 none 0"}
	if !slices.Equal(f.rows(), want) || f.DIGs != 2 || f.Counts["none"] != 3 || f.Counts["Pending"] != 0 {
		t.Errorf("alice's grid: %q (digs %d, counts %v), want %q", f.rows(), f.DIGs, f.Counts, want)
	}
	// bob (p2): other alone.
	bob := c.as(iss.Token("bob", []string{"project:p2"}, nil))
	bob.do("GET", "/fleet/clusters?placed=true", nil).must(t, 200).json(t, &f)
	if want := []string{"cp1/c4 Applied 1", "cp2/x1 Pending 1"}; !slices.Equal(f.rows(), want) || f.DIGs != 1 {
		t.Errorf("bob's placed clusters: %q (digs %d), want %q", f.rows(), f.DIGs, want)
	}
	c.do("GET", "/fleet/clusters", nil).must(t, http.StatusUnauthorized)

	for query, want := range map[string]string{
		"?state=Ready":    `state="Ready" is invalid: use one of Failed, Retrying, Pending, Applied, none`,
		"?placed=yes":     `placed="yes" is invalid: use true or false`,
		"?provider=a%20b": `provider "a b" is invalid`,
		"?limit=10":       `unknown query parameter "limit": use state, provider, placed`,
	} {
		if m := admin.do("GET", "/fleet/clusters"+query, nil).must(t, 400).message(t); !strings.Contains(m, want) {
			t.Errorf("%s: %q does not say %q", query, m, want)
		}
	}
	if m := admin.do("GET", "/fleet/clusters?provider=nope", nil).must(t, 404).message(t); m != `cluster provider "nope" does not exist` {
		t.Errorf("an unknown provider: %q", m)
	}
}
