package placement

import (
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// registry is an in-memory cluster registry: provider -> cluster -> labels.
type registry map[string]map[string][]string

func (r registry) ClusterExists(p, c string) (bool, error) { _, ok := r[p][c]; return ok, nil }

func (r registry) ClustersWithLabel(p, label string) ([]string, error) {
	var out []string
	for c, labels := range r[p] {
		if slices.Contains(labels, label) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out, nil
}

var reg = registry{
	"cp": {"a": {"edge"}, "b": {"edge", "gpu"}, "c": {"core"}},
	"cq": {"x": {"edge"}},
}

func byName(p, c string) model.ClusterMatch {
	return model.ClusterMatch{ClusterProvider: p, Cluster: c}
}
func byLabel(p, l string) model.ClusterMatch {
	return model.ClusterMatch{ClusterProvider: p, ClusterLabel: l}
}

func TestPlace(t *testing.T) {
	cases := []struct {
		name    string
		intents []model.PlacementIntent
		want    []string
		err     string
	}{
		{name: "allOf by name", intents: []model.PlacementIntent{{AllOf: []model.AllOf{{ClusterMatch: byName("cp", "c")}}}},
			want: []string{"cp+c"}},
		{name: "allOf by label takes every match", intents: []model.PlacementIntent{{AllOf: []model.AllOf{{ClusterMatch: byLabel("cp", "edge")}}}},
			want: []string{"cp+a", "cp+b"}},
		{name: "labels are per provider", intents: []model.PlacementIntent{{AllOf: []model.AllOf{{ClusterMatch: byLabel("cq", "edge")}}}},
			want: []string{"cq+x"}},
		{name: "anyOf picks exactly one, the first by name", intents: []model.PlacementIntent{{AnyOf: []model.ClusterMatch{byLabel("cp", "edge"), byName("cp", "c")}}},
			want: []string{"cp+a"}},
		{name: "nested anyOf inside allOf", intents: []model.PlacementIntent{{AllOf: []model.AllOf{
			{ClusterMatch: byName("cp", "c")}, {AnyOf: []model.ClusterMatch{byLabel("cp", "gpu")}}}}},
			want: []string{"cp+b", "cp+c"}},
		{name: "union without duplicates", intents: []model.PlacementIntent{
			{AllOf: []model.AllOf{{ClusterMatch: byLabel("cp", "edge")}}}, {AllOf: []model.AllOf{{ClusterMatch: byName("cp", "a")}}}},
			want: []string{"cp+a", "cp+b"}},
		{name: "unknown cluster", intents: []model.PlacementIntent{{AllOf: []model.AllOf{{ClusterMatch: byName("cp", "zz")}}}},
			err: `cluster "zz" of provider "cp", which is not registered`},
		{name: "anyOf without a match", intents: []model.PlacementIntent{{AnyOf: []model.ClusterMatch{byLabel("cp", "nope")}}},
			err: "no cluster matches anyOf"},
		{name: "empty placement", intents: []model.PlacementIntent{{AllOf: []model.AllOf{{ClusterMatch: byLabel("cp", "nope")}}}},
			err: "selects no cluster"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Place("web", c.intents, reg)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("got %v %v, want %v", got, err, c.want)
			}
		})
	}
}

func TestControllersRunPlacementFirstThenByPriority(t *testing.T) {
	ctrls := []lifecycle.Controller{{Name: "ovnaction", Priority: 5}, {Name: "hpa-plc", Type: model.ControllerPlacement, Priority: 9},
		{Name: "gac", Type: model.ControllerAction, Priority: 1}, {Name: "dtc", Priority: 1}, {Name: "sfc", Priority: 3}}
	byPriority(ctrls)
	var names []string
	for _, c := range ctrls {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "hpa-plc,dtc,gac,sfc,ovnaction" {
		t.Errorf("order %s", got)
	}
}

func TestSubcontrollersRunHigherPriorityFirst(t *testing.T) {
	subs := []lifecycle.Controller{{Name: "nps", Priority: 1}, {Name: "sds", Priority: 2}, {Name: "its", Priority: 1}, {Name: "swc", Priority: 50}}
	bySubPriority(subs)
	var names []string
	for _, c := range subs {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "swc,sds,its,nps" {
		t.Errorf("order %s", got)
	}
}
