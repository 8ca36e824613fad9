package capacity

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/rollout"
)

// valid is the smallest capacity placement the API accepts.
func valid() Spec {
	return Spec{Eligible: Eligible{Clusters: []string{"edge+c1", "c2"}},
		Workloads: []Workload{{App: "web", Deployment: "web", HPA: "web"}}}
}

func TestValidateNamesTheFieldAtFault(t *testing.T) {
	cases := []struct {
		name string
		edit func(s *Spec)
		want string // "" = valid
	}{
		{"the smallest", func(*Spec) {}, ""},
		{"every cluster of the logical cloud, by pattern and labels", func(s *Spec) {
			s.Eligible = Eligible{ClusterLabels: []string{"edge"}, NamePattern: `^edge\+`}
		}, ""},
		{"everything set", func(s *Spec) {
			s.MinClustersBelowCapacityCeiling, s.MinClusters, s.MaxClusters = 2, 2, 2
			s.EvaluationInterval, s.UnhealthyAfter = rollout.Duration(10*time.Second), rollout.Duration(time.Minute)
			s.ScaleIn = ScaleIn{Cooldown: rollout.Duration(time.Minute), Drain: &Drain{MaxReplicas: 1}}
			s.Workloads[0].Namespace = "shop"
		}, ""},
		{"a cluster listed twice", func(s *Spec) { s.Eligible.Clusters = []string{"c1", "c1"} }, "spec.eligible.clusters[1]: \"c1\" is listed twice"},
		{"a bad cluster name", func(s *Spec) { s.Eligible.Clusters = []string{"edge+"} }, "spec.eligible.clusters[0]: \"edge+\": cluster is required"},
		{"a bad pattern", func(s *Spec) { s.Eligible.NamePattern = "(" }, "spec.eligible.namePattern \"(\": error parsing regexp"},
		{"a huge pattern", func(s *Spec) { s.Eligible.NamePattern = strings.Repeat("a", MaxPattern+1) }, "spec.eligible.namePattern: 1025 characters"},
		{"negative", func(s *Spec) { s.MinClusters = -1 }, "spec.minClusters: -1 is negative"},
		{"max below min", func(s *Spec) { s.MinClusters, s.MaxClusters = 2, 1 }, "spec.maxClusters: 1 is below minClusters (2)"},
		{"a ceiling never met", func(s *Spec) { s.MinClustersBelowCapacityCeiling, s.MaxClusters = 3, 2 }, "spec.maxClusters: 2 is below minClustersBelowCapacityCeiling (3)"},
		{"more wanted than listed", func(s *Spec) { s.MinClusters = 3 }, "spec.minClusters: 3, but spec.eligible.clusters lists 2"},
		{"no workload", func(s *Spec) { s.Workloads = nil }, "spec.workloads: name at least one app's"},
		{"an app twice", func(s *Spec) { s.Workloads = append(s.Workloads, s.Workloads[0]) }, "spec.workloads[1].app: \"web\" has a workload already"},
		{"no hpa", func(s *Spec) { s.Workloads[0].HPA = "" }, "spec.workloads[0].hpa: required"},
		{"a bad deployment name", func(s *Spec) { s.Workloads[0].Deployment = "Web" }, "spec.workloads[0].deployment \"Web\""},
		{"a bad namespace", func(s *Spec) { s.Workloads[0].Namespace = "a.b" }, "spec.workloads[0].namespace \"a.b\""},
		{"too often", func(s *Spec) { s.EvaluationInterval = rollout.Duration(time.Second) }, "spec.evaluationInterval: 1s is not between 5s and 1h0m0s"},
		{"unhealthy before a read", func(s *Spec) { s.UnhealthyAfter = rollout.Duration(10 * time.Second) }, "spec.unhealthyAfter: 10s is shorter than the evaluation interval (30s)"},
		{"a negative cooldown", func(s *Spec) { s.ScaleIn.Cooldown = rollout.Duration(-time.Second) }, "spec.scaleIn.cooldown: -1s"},
		{"drained to nothing", func(s *Spec) { s.ScaleIn.Drain = &Drain{} }, "spec.scaleIn.drain.maxReplicas: 0 is not between 1"},
		{"a drain without scale-in", func(s *Spec) { s.ScaleIn = ScaleIn{Disabled: true, Drain: &Drain{MaxReplicas: 1}} }, "spec.scaleIn.drain: scale-in is disabled"},
	}
	for _, c := range cases {
		s := valid()
		c.edit(&s)
		err := s.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// The defaults fill what is unset, and a spec reads back as it was written.
func TestDefaultsAndJSON(t *testing.T) {
	var s Spec
	if err := json.Unmarshal([]byte(`{"eligible":{"clusters":["c1"]},"workloads":[{"app":"web","deployment":"web","hpa":"web"}],
		"evaluationInterval":"1m","scaleIn":{"drain":{"maxReplicas":2}}}`), &s); err != nil {
		t.Fatal(err)
	}
	d := s.WithDefaults()
	if d.MinClusters != 1 || d.MinClustersBelowCapacityCeiling != 1 || time.Duration(d.EvaluationInterval) != time.Minute ||
		time.Duration(d.UnhealthyAfter) != DefaultUnhealthyAfter || time.Duration(d.ScaleIn.Cooldown) != DefaultCooldown {
		t.Errorf("defaults: %+v", d)
	}
	// An interval longer than the default unhealthy time: a cluster is judged after a read at least.
	s.EvaluationInterval = rollout.Duration(5 * time.Minute)
	if got := time.Duration(s.WithDefaults().UnhealthyAfter); got != 5*time.Minute {
		t.Errorf("unhealthyAfter defaulted to %s with a 5m interval", got)
	}
}
