package diagnostics

import (
	"slices"
	"testing"
	"time"
)

const (
	projectPath = "/v2/projects/shopping"
	digPath     = projectPath + "/composite-apps/shop/v1/deployment-intent-groups/dig"
)

func stored() []Entry {
	return []Entry{
		{Kind: "Project", Path: projectPath, Project: "shopping", Name: "shopping", Source: SourceREST, Accepted: true},
		{Kind: "DeploymentIntentGroup", Path: digPath, Project: "shopping", Name: "dig", Source: SourceHub,
			Owner: "hub:DeploymentIntentGroup/shopping/dig", Accepted: true, Errors: []string{"InstantiateFailed: boom"}},
		{Kind: "ClusterProvider", Path: "/v2/cluster-providers/local", Name: "local", Source: SourceREST, Accepted: true},
	}
}

func keys(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key())
	}
	return out
}

// An accepted report joins the stored resource at its path; a refused one is an entry of
// its own, with the refusal as its error; an accepted one with no stored resource is left
// out. Entries come sorted by path, then object.
func TestMergeAddsReportsToStoredResources(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	reports := []Declaration{
		{Object: "DeploymentIntentGroup/shopping/dig", Kind: "DeploymentIntentGroup", Namespace: "shopping", Name: "dig", Generation: 4,
			Project: "shopping", Path: digPath, Accepted: true, Message: "accepted", Time: at},
		{Object: "DeploymentIntentGroup/shopping/broken", Kind: "DeploymentIntentGroup", Namespace: "shopping", Name: "broken",
			Generation: 2, Project: "shopping", Path: projectPath + "/composite-apps/shop/v1/deployment-intent-groups/broken",
			Message: `composite profile "nope" does not exist`, Time: at},
		{Object: "Cluster/c9", Kind: "Cluster", Name: "c9", Generation: 1, Message: ""},
		{Object: "Project/gone", Kind: "Project", Name: "gone", Path: "/v2/projects/gone", Accepted: true},
	}
	got := Merge(stored(), reports)
	want := []string{
		"\nCluster/c9",
		"/v2/cluster-providers/local\n",
		projectPath + "\n",
		projectPath + "/composite-apps/shop/v1/deployment-intent-groups/broken\nDeploymentIntentGroup/shopping/broken",
		digPath + "\nDeploymentIntentGroup/shopping/dig",
	}
	if !slices.Equal(keys(got), want) {
		t.Fatalf("entries %q\nwant    %q", keys(got), want)
	}
	dig := got[4]
	if dig.Object != "DeploymentIntentGroup/shopping/dig" || dig.Generation != 4 || dig.Reported == nil || !dig.Reported.Equal(at) ||
		!dig.Accepted || !slices.Equal(dig.Errors, []string{"InstantiateFailed: boom"}) {
		t.Errorf("the accepted report did not join the stored DIG as it is: %+v", dig)
	}
	broken := got[3]
	if broken.Accepted || broken.Source != SourceHub || broken.Generation != 2 || broken.Namespace != "shopping" ||
		!slices.Equal(broken.Errors, []string{`composite profile "nope" does not exist`}) {
		t.Errorf("the refused DIG's entry: %+v", broken)
	}
	if c := got[0]; c.Accepted || !slices.Equal(c.Errors, []string{refusedWithoutMessage}) {
		t.Errorf("a refusal without a message: %+v", c)
	}
	for _, e := range got {
		if e.Errors == nil {
			t.Errorf("%s: errors is null, not []", e.Key())
		}
	}
	if s := Summarize(got); s != (Summary{Total: 5, Refused: 2, Hub: 3, REST: 2}) {
		t.Errorf("summary %+v", s)
	}
}

func TestFilterSelectsBySourceAndAcceptance(t *testing.T) {
	all := Merge(stored(), []Declaration{{Object: "Project/p2", Kind: "Project", Name: "p2", Path: "/v2/projects/p2", Message: "no"}})
	no, yes := false, true
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"none", Filter{}, []string{"/v2/cluster-providers/local", "/v2/projects/p2", projectPath, digPath}},
		{"hub", Filter{Source: SourceHub}, []string{"/v2/projects/p2", digPath}},
		{"rest", Filter{Source: SourceREST}, []string{"/v2/cluster-providers/local", projectPath}},
		{"refused", Filter{Accepted: &no}, []string{"/v2/projects/p2"}},
		{"accepted from the hub", Filter{Source: SourceHub, Accepted: &yes}, []string{digPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range tc.f.Select(all) {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("selected %q, want %q", got, tc.want)
			}
		})
	}
}

// Pages follow one another from a token that is the last entry's key, whether or not that
// entry still exists.
func TestPageContinuesAfterTheLastKey(t *testing.T) {
	all := Merge(stored(), nil) // cluster provider, project, DIG
	first, more := Page(all, "", 2)
	if !more || !slices.Equal(keys(first), keys(all[:2])) {
		t.Fatalf("first page %q (more %t)", keys(first), more)
	}
	rest, more := Page(all, first[1].Key(), 2)
	if more || !slices.Equal(keys(rest), keys(all[2:])) {
		t.Fatalf("second page %q (more %t)", keys(rest), more)
	}
	gone := projectPath + "/composite-apps/a\n" // between the project and the DIG, deleted meanwhile
	if after, _ := Page(all, gone, 10); !slices.Equal(keys(after), keys(all[2:])) {
		t.Errorf("after a deleted entry: %q", keys(after))
	}
	if none, more := Page(all, all[2].Key(), 10); len(none) != 0 || more {
		t.Errorf("after the last: %q (more %t)", keys(none), more)
	}
}
