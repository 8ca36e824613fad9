package capacity

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/rollout"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func spec3() Spec {
	return Spec{Eligible: Eligible{Clusters: []string{"a", "b", "c"}}, Workloads: []Workload{{App: "web", Deployment: "web", HPA: "web"}}}
}

func active(c string, added time.Time) Member {
	return Member{Cluster: c, State: Active, Since: added, Added: added}
}

var (
	room     = Signals{Reachable: true}
	full     = Signals{Reachable: true, AtMaxReplicas: true}
	pending  = Signals{Reachable: true, Unschedulable: 3}
	idle     = Signals{Reachable: true, WantsFewer: true}
	floor    = Signals{Reachable: true, WantsFewer: true, AtFloor: true}
	gone     = Signals{Error: "dial tcp: connection refused"}
	eligible = []string{"a", "b", "c"}
)

func states(d Decision) string {
	var out []string
	for _, m := range d.Members {
		out = append(out, m.Cluster+"="+string(m.State))
	}
	return strings.Join(out, " ")
}

func TestDecide(t *testing.T) {
	long := t0.Add(-time.Hour)
	cases := []struct {
		name    string
		spec    func(*Spec)
		members []Member
		signals map[string]Signals
		at      time.Time
		add     []string
		remove  []string
		drain   []string
		restore []string
		want    string // members after
	}{
		{name: "a first evaluation places the most preferred cluster", at: t0,
			add: []string{"a"}, want: "a=ACTIVE"},
		{name: "minClusters are placed at once", spec: func(s *Spec) { s.MinClusters = 2 }, at: t0,
			add: []string{"a", "b"}, want: "a=ACTIVE b=ACTIVE"},
		{name: "below the ceiling: nothing changes", members: []Member{active("a", t0)},
			signals: map[string]Signals{"a": room}, at: t0.Add(time.Minute), want: "a=ACTIVE"},
		{name: "pods that no node takes: scale out to the next", members: []Member{active("a", t0)},
			signals: map[string]Signals{"a": pending}, at: t0.Add(time.Minute), add: []string{"b"}, want: "a=ACTIVE b=ACTIVE"},
		{name: "the HPA at its maximum: scale out", members: []Member{active("a", t0)},
			signals: map[string]Signals{"a": full}, at: t0.Add(time.Minute), add: []string{"b"}, want: "a=ACTIVE b=ACTIVE"},
		{name: "maxClusters caps the scale-out", spec: func(s *Spec) { s.MaxClusters = 2 },
			members: []Member{active("a", t0), active("b", t0)}, signals: map[string]Signals{"a": full, "b": full},
			at: t0.Add(time.Minute), want: "a=ACTIVE b=ACTIVE"},
		{name: "every eligible cluster full: nothing left to add",
			members: []Member{active("a", t0), active("b", t0), active("c", t0)}, signals: map[string]Signals{"a": full, "b": full, "c": full},
			at: t0.Add(time.Minute), want: "a=ACTIVE b=ACTIVE c=ACTIVE"},
		{name: "a cluster scaling in comes back before a new one is added",
			members: []Member{active("a", long), {Cluster: "b", State: ScalingIn, Added: long}}, signals: map[string]Signals{"a": full, "b": idle},
			at: t0, restore: []string{"b"}, want: "a=ACTIVE b=ACTIVE"},
		{name: "the load dropped: the least preferred goes scaling in",
			members: []Member{active("a", long), active("b", long)}, signals: map[string]Signals{"a": idle, "b": idle},
			at: t0, want: "a=ACTIVE b=SCALING_IN"},
		{name: "with a drain, its HPA is lowered", spec: func(s *Spec) { s.ScaleIn.Drain = &Drain{MaxReplicas: 1} },
			members: []Member{active("a", long), active("b", long)}, signals: map[string]Signals{"a": idle, "b": idle},
			at: t0, drain: []string{"b"}, want: "a=ACTIVE b=SCALING_IN"},
		{name: "no scale-in within the cool-down",
			members: []Member{active("a", long), active("b", t0.Add(-time.Minute))}, signals: map[string]Signals{"a": room, "b": idle},
			at: t0, want: "a=ACTIVE b=ACTIVE"},
		{name: "no scale-in below minClusters", spec: func(s *Spec) { s.MinClusters = 2 },
			members: []Member{active("a", long), active("b", long)}, signals: map[string]Signals{"a": idle, "b": idle},
			at: t0, want: "a=ACTIVE b=ACTIVE"},
		{name: "no scale-in when the rest would be at the ceiling",
			members: []Member{active("a", long), active("b", long)}, signals: map[string]Signals{"a": full, "b": idle},
			at: t0, want: "a=ACTIVE b=ACTIVE"},
		{name: "scale-in disabled", spec: func(s *Spec) { s.ScaleIn.Disabled = true },
			members: []Member{active("a", long), active("b", long)}, signals: map[string]Signals{"a": idle, "b": idle},
			at: t0, want: "a=ACTIVE b=ACTIVE"},
		{name: "scaling in, at the floor: removed",
			members: []Member{active("a", long), {Cluster: "b", State: ScalingIn, Added: long}}, signals: map[string]Signals{"a": room, "b": floor},
			at: t0, remove: []string{"b"}, want: "a=ACTIVE"},
		{name: "scaling in, not yet at the floor: kept",
			members: []Member{active("a", long), {Cluster: "b", State: ScalingIn, Added: long}}, signals: map[string]Signals{"a": room, "b": idle},
			at: t0, want: "a=ACTIVE b=SCALING_IN"},
		{name: "no longer eligible: evicted and replaced",
			members: []Member{active("x", long)}, signals: map[string]Signals{"x": room},
			at: t0, add: []string{"a"}, remove: []string{"x"}, want: "a=ACTIVE"},
		{name: "no longer eligible, with a drain: evicting until drained", spec: func(s *Spec) { s.ScaleIn.Drain = &Drain{MaxReplicas: 1} },
			members: []Member{active("a", long), active("x", long)}, signals: map[string]Signals{"a": room, "x": room},
			at: t0, drain: []string{"x"}, want: "a=ACTIVE x=EVICTING"},
		{name: "unreachable for a while: still active",
			members: []Member{active("a", long)}, signals: map[string]Signals{"a": gone},
			at: t0, add: []string{"b"}, want: "a=ACTIVE b=ACTIVE"},
		{name: "unreachable for unhealthyAfter: unhealthy, and replaced",
			members: []Member{{Cluster: "a", State: Active, Added: long, Unreachable: t0.Add(-3 * time.Minute)}, active("b", long)},
			signals: map[string]Signals{"a": gone, "b": full}, at: t0, add: []string{"c"}, want: "a=UNHEALTHY b=ACTIVE c=ACTIVE"},
		{name: "an unhealthy cluster that answers is active again",
			members: []Member{{Cluster: "a", State: Unhealthy, Added: long}, active("b", long)}, signals: map[string]Signals{"a": room, "b": room},
			at: t0, want: "a=ACTIVE b=ACTIVE"},
		{name: "a cluster being emptied that stays unreachable waits for it to answer",
			members: []Member{active("a", long), {Cluster: "b", State: ScalingIn, Added: long, Unreachable: t0.Add(-time.Hour)}},
			signals: map[string]Signals{"a": room, "b": gone}, at: t0, want: "a=ACTIVE b=SCALING_IN"},
		{name: "an unhealthy cluster no longer eligible: evicted once it answers",
			members: []Member{active("a", long), {Cluster: "x", State: Unhealthy, Added: long, Unreachable: long}},
			signals: map[string]Signals{"a": room, "x": gone}, at: t0, want: "a=ACTIVE x=EVICTING"},
	}
	for _, c := range cases {
		s := spec3()
		if c.spec != nil {
			c.spec(&s)
		}
		d := Decide(s, c.members, eligible, c.signals, c.at)
		for _, f := range []struct {
			what      string
			got, want []string
		}{{"add", d.Add, c.add}, {"remove", d.Remove, c.remove}, {"drain", d.Drain, c.drain}, {"restore", d.Restore, c.restore}} {
			if !slices.Equal(f.got, f.want) {
				t.Errorf("%s: %s %v, want %v (%s)", c.name, f.what, f.got, f.want, d.Describe())
			}
		}
		if got := states(d); got != c.want {
			t.Errorf("%s: members %s, want %s (%s)", c.name, got, c.want, d.Describe())
		}
		if len(d.Transitions) == 0 && (d.Changes() || len(d.Drain)+len(d.Restore) > 0) {
			t.Errorf("%s: a change without a transition saying why", c.name)
		}
	}
}

// Hysteresis: a cluster added for the load is not taken out again by the next
// evaluations, however idle, until its cool-down has passed.
func TestNoFlapping(t *testing.T) {
	s := spec3()
	s.ScaleIn.Cooldown = rollout.Duration(10 * time.Minute)
	members := []Member{active("a", t0.Add(-time.Hour))}
	d := Decide(s, members, eligible, map[string]Signals{"a": full}, t0)
	if !slices.Equal(d.Add, []string{"b"}) {
		t.Fatalf("scale out: %s", d.Describe())
	}
	members = d.Members
	for at := t0.Add(time.Minute); at.Before(t0.Add(10 * time.Minute)); at = at.Add(30 * time.Second) {
		d = Decide(s, members, eligible, map[string]Signals{"a": idle, "b": idle}, at)
		if d.Changes() || len(d.Transitions) > 0 {
			t.Fatalf("at %s, within the cool-down: %s", at.Sub(t0), d.Describe())
		}
	}
	d = Decide(s, members, eligible, map[string]Signals{"a": idle, "b": idle}, t0.Add(10*time.Minute))
	if states(d) != "a=ACTIVE b=SCALING_IN" {
		t.Errorf("after the cool-down: %s", states(d))
	}
}

// A scale-out says why: too few Active clusters first, then too few below their ceiling.
func TestShortSaysWhy(t *testing.T) {
	for _, c := range []struct {
		active, below int
		want          string
	}{
		{2, 1, ""},
		{1, 1, "1 active, fewer than minClusters (2)"},
		{0, 0, "0 active, fewer than minClusters (2)"},
		{3, 0, "0 active cluster(s) below their capacity ceiling, fewer than 1"},
	} {
		x := newDecider(Spec{MinClusters: 2, MinClustersBelowCapacityCeiling: 1}, eligible, nil, t0)
		x.active, x.below = c.active, c.below
		if got := x.short(); got != c.want {
			t.Errorf("%d active, %d below: %q, want %q", c.active, c.below, got, c.want)
		}
	}
}

// Each transition of an evaluation says why, in the words of the DIG's history.
func TestDecideReasons(t *testing.T) {
	long := t0.Add(-time.Hour)
	s := spec3()
	s.MinClusters = 2
	d := Decide(s, []Member{{Cluster: "x", State: Active, Added: long}, {Cluster: "a", State: Active, Added: long, Unreachable: t0.Add(-3 * time.Minute)}},
		eligible, map[string]Signals{"x": room, "a": gone}, t0)
	var got []string
	for _, tr := range d.Transitions {
		got = append(got, tr.Cluster+" "+string(tr.From)+">"+string(tr.To)+": "+tr.Reason)
	}
	want := []string{
		"x ACTIVE>EVICTING: no longer eligible",
		"x EVICTING>: no longer eligible: removed",
		"a ACTIVE>UNHEALTHY: unreachable for 3m0s: dial tcp: connection refused",
		"b >ACTIVE: scale out: 0 active, fewer than minClusters (2)",
		"c >ACTIVE: scale out: 1 active, fewer than minClusters (2)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transitions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
