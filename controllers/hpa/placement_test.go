package hpa

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
)

// fixedIntents serves the same intents to every run.
type fixedIntents []intent

func (f fixedIntents) Intents(context.Context, contract.Input) ([]intent, error) { return f, nil }

// gpuClusters: c1's node has the label and 4 free cores, c2's has neither.
func gpuClusters() liveNodes {
	return clusters(map[string][]runtime.Object{
		"p+c1": {k8sNode("n1", map[string]string{"gpu": "true"}, "cpu=6", "memory=16G"), k8sPod("busy", "n1", corev1.PodRunning, "cpu=2")},
		"p+c2": {k8sNode("n1", map[string]string{"gpu": "false"}, "cpu=2", "memory=16G")},
		"p+c3": {k8sNode("n1", map[string]string{"gpu": "true"}, "cpu=8", "memory=16G")},
	})
}

func webIntent(reqs ...requirement) intent {
	return intent{Name: "hpa1", App: "web", Consumers: []consumer{
		{Name: "c", Spec: ConsumerSpec{Name: "web", Container: "app", Replicas: 1}, Requirements: reqs}}}
}

func runPlacement(t *testing.T, groups [][]string, nodes nodeSource, intents ...intent) (*contracttest.Fake, error) {
	t.Helper()
	var placed []string
	for _, g := range groups {
		placed = append(placed, slices.Min(g))
	}
	f := &contracttest.Fake{In: contract.Input{Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: placed, Groups: groups}, {Name: "db", Clusters: []string{"p+c2"}}}}
	p := &placement{intents: fixedIntents(intents), nodes: nodes}
	return f, p.Run(context.Background(), f)
}

func TestPlacementKeepsTheClusterThatQualifies(t *testing.T) {
	cases := []struct {
		name string
		req  requirement
	}{
		{"allocatable: 3 cores free only on c1", requirement{Name: "cpu", Spec: alloc("cpu", 3, 0)}},
		{"non-allocatable: label only on c1", requirement{Name: "gpu", Spec: label("gpu", "true")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := runPlacement(t, [][]string{{"p+c1", "p+c2"}}, gpuClusters(), webIntent(c.req))
			if err != nil {
				t.Fatal(err)
			}
			want := contract.Edit{Op: contract.EditRemoveClusters, App: "web", Clusters: []string{"p+c2"}}
			if len(f.Edits) != 1 || !equalEdit(f.Edits[0], want) {
				t.Fatalf("edits = %+v, want %+v", f.Edits, want)
			}
		})
	}
}

func TestPlacementRefusesWhenNoClusterQualifies(t *testing.T) {
	_, err := runPlacement(t, [][]string{{"p+c1", "p+c2"}}, gpuClusters(), webIntent(requirement{Name: "cpu", Spec: alloc("cpu", 5, 0)}))
	var refusal *contract.Refusal
	if !errors.As(err, &refusal) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	for _, part := range []string{`app "web"`, "[p+c1, p+c2]",
		`cluster p+c1: hpa consumer "c" of intent "hpa1": replica 1 of 1 needs cpu 5, more than any node with its labels has free (n1: cpu 4)`,
		"cluster p+c2:"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
}

// An anyOf group keeps its clusters that qualify; an allOf cluster (a group of its own)
// that does not qualify fails the operation, as in EMCO.
func TestPlacementWorksGroupByGroup(t *testing.T) {
	gpu := webIntent(requirement{Name: "gpu", Spec: label("gpu", "true")})
	f, err := runPlacement(t, [][]string{{"p+c1", "p+c2", "p+c3"}}, gpuClusters(), gpu)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Edits) != 1 || !slices.Equal(f.Edits[0].Clusters, []string{"p+c2"}) {
		t.Fatalf("edits = %+v, want p+c2 removed and c1, c3 left to choose from", f.Edits)
	}
	f, err = runPlacement(t, [][]string{{"p+c2", "p+c3"}, {"p+c1"}}, gpuClusters(), gpu)
	if err != nil || len(f.Edits) != 1 || !slices.Equal(f.Edits[0].Clusters, []string{"p+c2"}) {
		t.Fatalf("edits = %+v, err = %v, want p+c2 removed from its anyOf group", f.Edits, err)
	}
	_, err = runPlacement(t, [][]string{{"p+c1", "p+c3"}, {"p+c2"}}, gpuClusters(), gpu)
	if err == nil || !strings.Contains(err.Error(), "placement group [p+c2]") {
		t.Fatalf("err = %v, want the allOf cluster p+c2 refused", err)
	}
}

func TestPlacementWithoutConstraintsChangesNothing(t *testing.T) {
	cases := map[string][]intent{
		"no intents":                    nil,
		"consumer without requirements": {{Name: "hpa1", App: "web", Consumers: []consumer{{Name: "c", Spec: ConsumerSpec{Name: "web", Replicas: 9}}}}},
		"intent without consumers":      {{Name: "hpa1", App: "web"}},
	}
	for name, intents := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := runPlacement(t, [][]string{{"p+c1", "p+c2"}}, clusters(nil), intents...)
			if err != nil || len(f.Edits) != 0 {
				t.Fatalf("edits = %+v, err = %v, want none (and no cluster read)", f.Edits, err)
			}
		})
	}
}

func TestPlacementReturnsNodeReadErrorsToBeRetried(t *testing.T) {
	broken := clusters(map[string][]runtime.Object{"p+c1": {k8sNode("n1", nil, "cpu=8")}}) // p+c2 unreachable
	_, err := runPlacement(t, [][]string{{"p+c1", "p+c2"}}, broken, webIntent(requirement{Name: "cpu", Spec: alloc("cpu", 1, 0)}))
	var refusal *contract.Refusal
	var cause *unreachable
	if err == nil || errors.As(err, &refusal) || !errors.As(err, &cause) || !strings.Contains(err.Error(), "reach cluster p+c2") {
		t.Fatalf("err = %v, want the read error of p+c2, not a refusal", err)
	}
}

func TestPlacementRefusesAnIntentForAnUnknownApp(t *testing.T) {
	it := webIntent()
	it.App = "wbe"
	_, err := runPlacement(t, [][]string{{"p+c1"}}, gpuClusters(), it)
	var refusal *contract.Refusal
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), `names app "wbe"`) {
		t.Fatalf("err = %v, want a refusal naming the app", err)
	}
}

// Apps share nothing: each app's capacity is counted on its own, as in EMCO.
func TestPlacementCountsCapacityPerApp(t *testing.T) {
	cpu := requirement{Name: "cpu", Spec: alloc("cpu", 3, 0)}
	db := webIntent(cpu)
	db.Name, db.App = "hpa2", "db"
	f := &contracttest.Fake{In: contract.Input{Operation: contract.OpInstantiate}, AppList: []contract.App{
		{Name: "web", Clusters: []string{"p+c1"}, Groups: [][]string{{"p+c1"}}},
		{Name: "db", Clusters: []string{"p+c1"}, Groups: [][]string{{"p+c1"}}}}}
	p := &placement{intents: fixedIntents{webIntent(cpu), db}, nodes: gpuClusters()}
	if err := p.Run(context.Background(), f); err != nil || len(f.Edits) != 0 {
		t.Fatalf("edits = %+v, err = %v", f.Edits, err)
	}
}

func TestPlacementDoesNothingOnTerminate(t *testing.T) {
	f := &contracttest.Fake{In: contract.Input{Operation: contract.OpTerminate}}
	p := &placement{intents: fixedIntents{webIntent(requirement{Name: "cpu", Spec: alloc("cpu", 99, 0)})}, nodes: clusters(nil)}
	if err := p.Run(context.Background(), f); err != nil || len(f.Edits) != 0 {
		t.Fatalf("edits = %+v, err = %v", f.Edits, err)
	}
}

func equalEdit(a, b contract.Edit) bool {
	return a.Op == b.Op && a.App == b.App && slices.Equal(a.Clusters, b.Clusters)
}
