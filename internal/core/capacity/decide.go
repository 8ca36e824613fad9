package capacity

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is where a cluster stands in a capacity placement (the seed's state machine, with
// UNHEALTHY added).
type State string

const (
	// Active: the workloads run there and it counts towards the clusters below the ceiling.
	Active State = "ACTIVE"
	// ScalingIn: the load no longer needs it; drained (when asked) and removed at the floor.
	ScalingIn State = "SCALING_IN"
	// Evicting: no longer eligible; drained (when asked) and removed.
	Evicting State = "EVICTING"
	// Unhealthy: unreachable for UnhealthyAfter; replaced, not counted, and Active again
	// once it answers. It stays in the placement: an update that took it out would wait
	// for it to answer to delete its objects, and hold every other decision meanwhile.
	Unhealthy State = "UNHEALTHY"
)

// Member is one cluster the autoscaler keeps: each is in the placement.
type Member struct {
	Cluster string    `json:"cluster"`
	State   State     `json:"state"`
	Since   time.Time `json:"since"`  // of the state
	Reason  string    `json:"reason"` // of the last transition
	Added   time.Time `json:"added"`  // to the placement (the cool-down counts from it)
	// Unreachable is when its signals first failed to be read in a row (zero: read).
	Unreachable time.Time `json:"unreachable,omitzero"`
}

// Signals are what one evaluation read of one cluster, its workloads' taken together: a
// cluster is at its capacity ceiling when any workload is, wants fewer when every one does.
type Signals struct {
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"` // why it was not
	// Unschedulable counts the workloads' pods pending because no node can take them.
	Unschedulable int `json:"unschedulable"`
	// AtMaxReplicas: an HPA is at its maximum and ScalingLimited (it wants more).
	AtMaxReplicas bool `json:"atMaxReplicas"`
	// WantsFewer: every HPA is at its minimum and ScalingLimited (it wants fewer).
	WantsFewer bool `json:"wantsFewer"`
	// AtFloor: every workload runs no more replicas than the floor of a cluster being
	// emptied (the drain's maximum, else the HPA's minimum).
	AtFloor bool `json:"atFloor"`
}

// AtCeiling tells whether the cluster can take no more of the workloads' pods.
func (s Signals) AtCeiling() bool { return s.Unschedulable > 0 || s.AtMaxReplicas }

// Decision is what one evaluation decided: the placement's clusters to add and remove (one
// update of the DIG carries them), the clusters whose HPAs to drain or restore, every
// transition with its reason, and the members after it.
type Decision struct {
	Add         []string     `json:"add,omitempty"`
	Remove      []string     `json:"remove,omitempty"`
	Drain       []string     `json:"drain,omitempty"`
	Restore     []string     `json:"restore,omitempty"`
	Transitions []Transition `json:"transitions,omitempty"`
	Members     []Member     `json:"members"`
}

// Changes tells whether the decision changes the placement's clusters.
func (d Decision) Changes() bool { return len(d.Add) > 0 || len(d.Remove) > 0 }

// Transition is one cluster's change of state; From "" is a cluster added, To "" one removed.
type Transition struct {
	Cluster string `json:"cluster"`
	From    State  `json:"from,omitempty"`
	To      State  `json:"to,omitempty"`
	Reason  string `json:"reason"`
}

// Decide is one evaluation: from the members, the eligible clusters in order of preference,
// the signals read (by cluster; a member without signals was not read) and the time, what
// changes. It is pure, so the autoscaler workflow calls it directly and every decision
// replays. The rules, in order:
//
//  1. a member no longer eligible is Evicting; an Active one unreachable for UnhealthyAfter
//     is Unhealthy (no longer counted); an Unhealthy one that answers again is Active;
//  2. a cluster Scaling in or Evicting is removed once it answers and its workloads are at
//     the floor (at once when Evicting without a drain): its objects are deleted by the
//     update, which needs the cluster to answer;
//  3. scale out, while fewer Active clusters than MinClustersBelowCapacityCeiling are below
//     their ceiling or fewer than MinClusters are Active, up to MaxClusters: a cluster
//     Scaling in comes back first (its HPA restored), then the next eligible cluster;
//  4. otherwise scale in, unless disabled and not within Cooldown of the last cluster
//     added (hysteresis): of the Active clusters whose workloads want fewer, the least
//     preferred goes Scaling in (drained when asked), if that leaves enough clusters below
//     the ceiling and MinClusters Active. One at a time.
//
// Its steps: review (rules 1 and 2), count, scaleOut (rule 3), scaleIn (rule 4), then
// the members in order of preference.
func Decide(spec Spec, members []Member, eligible []string, signals map[string]Signals, now time.Time) Decision {
	x := newDecider(spec, eligible, signals, now)
	x.review(members)
	x.active, x.below = x.count()
	x.scaleOut()
	x.scaleIn()
	x.d.Members = x.kept
	slices.SortStableFunc(x.d.Members, func(a, b Member) int { return order(x.rank, a.Cluster) - order(x.rank, b.Cluster) })
	return x.d
}

// decider is one evaluation under way: Decide's inputs, the decision so far and the
// members it keeps.
type decider struct {
	spec     Spec
	eligible []string
	rank     map[string]int // the eligible clusters' order of preference
	signals  map[string]Signals
	now      time.Time
	d        Decision
	kept     []Member
	// active counts the Active members kept, below those of them below their capacity
	// ceiling (a cluster added counts as below until it is read).
	active, below int
}

func newDecider(spec Spec, eligible []string, signals map[string]Signals, now time.Time) *decider {
	x := &decider{spec: spec.WithDefaults(), eligible: eligible, rank: map[string]int{}, signals: signals, now: now}
	for i, c := range eligible {
		x.rank[c] = i
	}
	return x
}

// move changes m's state, with the transition saying why.
func (x *decider) move(m *Member, to State, reason string) {
	x.d.Transitions = append(x.d.Transitions, Transition{Cluster: m.Cluster, From: m.State, To: to, Reason: reason})
	m.State, m.Since, m.Reason = to, x.now, reason
}

// review applies rules 1 and 2 to each member: whether it answers, its state, then its
// removal; the members not removed are kept.
func (x *decider) review(members []Member) {
	for _, m := range members {
		s, read := x.signals[m.Cluster]
		switch {
		case read && s.Reachable:
			m.Unreachable = time.Time{}
		case m.Unreachable.IsZero():
			m.Unreachable = x.now
		}
		_, ok := x.rank[m.Cluster]
		switch {
		case !ok && m.State != Evicting:
			x.move(&m, Evicting, "no longer eligible")
			if x.spec.ScaleIn.Drain != nil {
				x.d.Drain = append(x.d.Drain, m.Cluster)
			}
		case m.State == Unhealthy && read && s.Reachable:
			x.move(&m, Active, "answers again")
		case m.State == Active && !m.Unreachable.IsZero() && x.now.Sub(m.Unreachable) >= time.Duration(x.spec.UnhealthyAfter):
			x.move(&m, Unhealthy, fmt.Sprintf("unreachable for %s: %s", x.now.Sub(m.Unreachable).Round(time.Second), s.Error))
		}
		answers := read && s.Reachable
		if (m.State == ScalingIn || m.State == Evicting) && answers && (s.AtFloor || m.State == Evicting && x.spec.ScaleIn.Drain == nil) {
			x.d.Transitions = append(x.d.Transitions, Transition{Cluster: m.Cluster, From: m.State, Reason: removedWhy(m.State, x.spec)})
			x.d.Remove = append(x.d.Remove, m.Cluster)
			continue
		}
		x.kept = append(x.kept, m)
	}
}

// count counts the Active members kept, and those of them read below their ceiling.
func (x *decider) count() (active, below int) {
	for _, m := range x.kept {
		if m.State != Active {
			continue
		}
		active++
		if s, read := x.signals[m.Cluster]; read && s.Reachable && !s.AtCeiling() {
			below++
		}
	}
	return active, below
}

// placed counts the clusters the workloads run on, those unreachable apart.
func (x *decider) placed() int {
	n := 0
	for _, m := range x.kept {
		if m.State != Unhealthy {
			n++
		}
	}
	return n
}

// short says why there are too few Active clusters, or too few below their ceiling; ""
// when there are enough.
func (x *decider) short() string {
	switch {
	case x.active < x.spec.MinClusters:
		return fmt.Sprintf("%d active, fewer than minClusters (%d)", x.active, x.spec.MinClusters)
	case x.below < x.spec.MinClustersBelowCapacityCeiling:
		return fmt.Sprintf("%d active cluster(s) below their capacity ceiling, fewer than %d", x.below, x.spec.MinClustersBelowCapacityCeiling)
	}
	return ""
}

// scaleOut applies rule 3: while short and below MaxClusters, a cluster Scaling in comes
// back (its HPA restored), else the next eligible cluster is added.
func (x *decider) scaleOut() {
	for why := x.short(); why != "" && (x.spec.MaxClusters == 0 || x.active < x.spec.MaxClusters); why = x.short() {
		if i := slices.IndexFunc(x.kept, func(m Member) bool { return m.State == ScalingIn }); i >= 0 {
			x.move(&x.kept[i], Active, "scale out: "+why)
			x.d.Restore = append(x.d.Restore, x.kept[i].Cluster)
		} else if c := next(x.eligible, x.kept); c != "" && (x.spec.MaxClusters == 0 || x.placed() < x.spec.MaxClusters) {
			x.kept = append(x.kept, Member{Cluster: c, State: Active, Since: x.now, Added: x.now, Reason: "scale out: " + why})
			x.d.Transitions = append(x.d.Transitions, Transition{Cluster: c, To: Active, Reason: "scale out: " + why})
			x.d.Add = append(x.d.Add, c)
		} else {
			break // nothing left to add
		}
		// A cluster added has not been read: it counts as below its ceiling until it is.
		x.active, x.below = x.active+1, x.below+1
	}
}

// scaleIn applies rule 4: when nothing is short or changing and scale-in is enabled, the
// candidate (see scaleInCandidate) goes Scaling in (drained when asked) if enough
// clusters are left.
func (x *decider) scaleIn() {
	if x.short() != "" || x.spec.ScaleIn.Disabled || x.d.Changes() {
		return
	}
	c := scaleInCandidate(x.spec, x.kept, x.signals, x.rank, x.now)
	if c < 0 || x.active-1 < x.spec.MinClusters || x.below-1 < x.spec.MinClustersBelowCapacityCeiling {
		return
	}
	x.move(&x.kept[c], ScalingIn, "its workloads want fewer replicas than their minimum")
	if x.spec.ScaleIn.Drain != nil {
		x.d.Drain = append(x.d.Drain, x.kept[c].Cluster)
	}
}

func removedWhy(s State, spec Spec) string {
	switch {
	case s == Evicting && spec.ScaleIn.Drain == nil:
		return "no longer eligible: removed"
	case spec.ScaleIn.Drain != nil:
		return fmt.Sprintf("drained to %d replica(s): removed", spec.ScaleIn.Drain.MaxReplicas)
	}
	return "down to its minimum replicas: removed"
}

// order ranks a cluster by preference; clusters no longer eligible go last.
func order(rank map[string]int, c string) int {
	if r, ok := rank[c]; ok {
		return r
	}
	return len(rank)
}

// next is the most preferred eligible cluster that is not a member.
func next(eligible []string, members []Member) string {
	for _, c := range eligible {
		if !slices.ContainsFunc(members, func(m Member) bool { return m.Cluster == c }) {
			return c
		}
	}
	return ""
}

// scaleInCandidate is the least preferred Active member whose workloads want fewer, once
// the last cluster added has run the cool-down (-1: none).
func scaleInCandidate(spec Spec, members []Member, signals map[string]Signals, rank map[string]int, now time.Time) int {
	for _, m := range members {
		if now.Sub(m.Added) < time.Duration(spec.ScaleIn.Cooldown) {
			return -1 // the last scale-out is recent: the load that asked for it may come back
		}
	}
	best := -1
	for i, m := range members {
		s, read := signals[m.Cluster]
		if m.State != Active || !read || !s.Reachable || !s.WantsFewer {
			continue
		}
		if best < 0 || order(rank, m.Cluster) > order(rank, members[best].Cluster) {
			best = i
		}
	}
	return best
}

// Clusters lists the members: the clusters the workloads are placed on, in order.
func Clusters(members []Member) []string {
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = m.Cluster
	}
	return out
}

// Describe is a decision in a line, for the DIG's history and the dashboard.
func (d Decision) Describe() string {
	var parts []string
	for _, t := range d.Transitions {
		from, to := string(t.From), string(t.To)
		if from == "" {
			from = "added"
		}
		if to == "" {
			to = "removed"
		}
		parts = append(parts, fmt.Sprintf("%s %s→%s (%s)", t.Cluster, from, to, t.Reason))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, "; ")
}
