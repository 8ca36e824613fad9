package placement

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/lifecycle"
)

func cloudOf(keys ...string) *cloudMembers {
	m := &cloudMembers{name: "lc", members: map[string]bool{}}
	for _, k := range keys {
		m.members[k] = true
	}
	return m
}

func TestCapacityEligible(t *testing.T) {
	cloud := cloudOf("edge+c1", "edge+c2", "edge+c3", "core+c4", "core+c1")
	all := map[string][][]string{"web": {{"edge+c1"}, {"edge+c2"}, {"edge+c3"}, {"core+c4"}, {"core+c1"}}}
	for _, tc := range []struct {
		name     string
		eligible capacity.Eligible
		groups   map[string][][]string
		want     []string
		err      string
	}{
		{name: "none listed: the logical cloud's, by name", groups: all,
			want: []string{"core+c1", "core+c4", "edge+c1", "edge+c2", "edge+c3"}},
		{name: "listed: in that order, bare names resolved, unknown ones skipped", groups: all,
			eligible: capacity.Eligible{Clusters: []string{"edge+c3", "c4", "edge+c1", "elsewhere", "edge+c3"}},
			want:     []string{"edge+c3", "core+c4", "edge+c1"}},
		{name: "a bare name two providers have", groups: all,
			eligible: capacity.Eligible{Clusters: []string{"c1"}}, err: `"c1" names clusters of several providers (core+c1, edge+c1)`},
		{name: "a name pattern", groups: all, eligible: capacity.Eligible{NamePattern: `^edge\+c[12]$`},
			want: []string{"edge+c1", "edge+c2"}},
		{name: "the app's placement intents bound it", groups: map[string][][]string{"web": {{"edge+c2"}, {"edge+c1", "edge+c3"}}},
			eligible: capacity.Eligible{Clusters: []string{"edge+c3", "edge+c2", "core+c4"}},
			want:     []string{"edge+c3", "edge+c2"}},
	} {
		c := &capacityDoc{name: "fleet", spec: capacity.Spec{Eligible: tc.eligible, Workloads: []capacity.Workload{{App: "web"}}}}
		got, err := c.eligible(context.Background(), nil, cloud, tc.groups)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestCapacityMembers(t *testing.T) {
	c := &capacityDoc{name: "fleet", spec: capacity.Spec{MinClusters: 2, Workloads: []capacity.Workload{{App: "web"}}}.WithDefaults()}
	if got, err := c.members([]string{"b", "a", "c"}, time.Now()); err != nil || !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("before any record: %v (%v), want the first minClusters eligible", got, err)
	}
	if _, err := c.members(nil, time.Now()); err == nil || !strings.Contains(err.Error(), "no cluster is eligible") {
		t.Errorf("nothing eligible: %v", err)
	}
	c.state = lifecycle.AutoscaleState{Members: []capacity.Member{{Cluster: "c", State: capacity.Active}, {Cluster: "x", State: capacity.Unhealthy}}}
	if got, _ := c.members([]string{"a"}, time.Now()); !slices.Equal(got, []string{"c", "x"}) {
		t.Errorf("recorded: %v, want every member (an unhealthy one stays placed)", got)
	}
}
