package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Member is a placed cluster as the layout sees it.
type Member struct {
	Key    string   // provider+cluster
	Labels []string // its cluster labels
}

// Plan is a strategy laid out over one context: what the operation workflow needs of each
// stage. It travels in the placement's result, so it holds counts and batch ranges, never
// cluster lists: the clusters of stage i are those of the context's batches
// [FirstBatch, FirstBatch+Batches).
type Plan struct {
	Strategy string         `json:"strategy"`
	Rollback string         `json:"rollback"`
	Stages   []PlannedStage `json:"stages"`
	// Offline is the strategy's offline policy, its defaults filled in (nil in plans made
	// before it was).
	Offline *Offline `json:"offline,omitempty"`
}

// PlannedStage is a stage of a Plan, its shares resolved to counts.
type PlannedStage struct {
	Name       string `json:"name"`
	Clusters   int    `json:"clusters"`
	FirstBatch int    `json:"firstBatch"`
	Batches    int    `json:"batches"`
	// Wave is how many of its batches run at once (MaxConcurrency clusters in all).
	Wave             int           `json:"wave"`
	MaxUnavailable   int           `json:"maxUnavailable"`
	MaxFailures      int           `json:"maxFailures"`
	ProgressDeadline time.Duration `json:"progressDeadline"`
	MinSuccessTime   time.Duration `json:"minSuccessTime,omitempty"`
	Before           []Task        `json:"before,omitempty"`
	After            []Task        `json:"after,omitempty"`
	Window           *Window       `json:"window,omitempty"`
}

// Layout assigns each member to the first stage that selects it, orders each stage, and
// cuts it into batches of at most perBatch clusters, and of at most the stage's
// concurrency. It returns the plan, the batch of each cluster and each stage's clusters
// in order. A member no stage selects is an error: it would never be changed.
func Layout(name string, s Spec, members []Member, perBatch int) (Plan, map[string]int, [][]string, error) {
	off := s.OfflineOf()
	plan := Plan{Strategy: name, Rollback: cmp.Or(s.Rollback, RollbackAuto), Offline: &off}
	left := slices.Clone(members)
	slices.SortFunc(left, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
	batchOf := make(map[string]int, len(members))
	stages := make([][]string, len(s.Stages))
	next := 0
	for i, st := range s.Stages {
		var in, out []Member
		for _, m := range left {
			if st.selects(m) {
				in = append(in, m)
			} else {
				out = append(out, m)
			}
		}
		left = out
		st.sort(in)
		n := len(in)
		conc := max(1, min(st.MaxConcurrency.Of(n, n), max(n, 1)))
		size := max(1, min(perBatch, conc))
		batches := (n + size - 1) / size
		ps := PlannedStage{Name: st.Name, Clusters: n, FirstBatch: next, Batches: batches,
			Wave:             max(1, conc/size),
			MaxUnavailable:   st.MaxUnavailable.Of(n, n),
			MaxFailures:      st.MaxFailures.Of(n, 0),
			ProgressDeadline: cmp.Or(time.Duration(st.ProgressDeadline), DefaultProgressDeadline),
			MinSuccessTime:   time.Duration(st.MinSuccessTime),
			Before:           st.Before, After: st.After, Window: st.Window}
		for j, m := range in {
			batchOf[m.Key] = next + j/size
			stages[i] = append(stages[i], m.Key)
		}
		next += batches
		plan.Stages = append(plan.Stages, ps)
	}
	if len(left) > 0 {
		keys := make([]string, 0, 5)
		for _, m := range left[:min(len(left), 5)] {
			keys = append(keys, m.Key)
		}
		more := ""
		if len(left) > 5 {
			more = fmt.Sprintf(" and %d more", len(left)-5)
		}
		return Plan{}, nil, nil, fmt.Errorf("rollout strategy %q: no stage selects cluster(s) %s%s; add them to a stage, or end with a stage that selects no labels or names (it takes every cluster left)",
			name, strings.Join(keys, ", "), more)
	}
	return plan, batchOf, stages, nil
}

// selects reports whether the stage takes m: by name, by labels, or as the catch-all.
func (st *Stage) selects(m Member) bool {
	if len(st.Clusters) == 0 && len(st.ClusterLabels) == 0 {
		return true
	}
	_, name, _ := strings.Cut(m.Key, "+")
	for _, c := range st.Clusters {
		if c == m.Key || c == name {
			return true
		}
	}
	if len(st.ClusterLabels) == 0 {
		return false
	}
	for _, l := range st.ClusterLabels {
		if !slices.Contains(m.Labels, l) {
			return false
		}
	}
	return true
}

// sort orders a stage's members: by SortByLabel's value when set, then by key.
func (st *Stage) sort(ms []Member) {
	if st.SortByLabel == "" {
		return // already by key
	}
	value := func(m Member) (string, bool) {
		for _, l := range m.Labels {
			if v, ok := strings.CutPrefix(l, st.SortByLabel+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	slices.SortStableFunc(ms, func(a, b Member) int {
		va, oka := value(a)
		vb, okb := value(b)
		switch {
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		case !oka:
			return 0
		}
		// Numbers first, in numeric order, then other values in lexical order: comparing
		// a number with a word lexically would not be a total order ("9" < "10" < "1a" < "9").
		na, ea := strconv.ParseFloat(va, 64)
		nb, eb := strconv.ParseFloat(vb, 64)
		switch {
		case ea == nil && eb == nil:
			return cmp.Compare(na, nb)
		case ea == nil:
			return -1
		case eb == nil:
			return 1
		}
		return strings.Compare(va, vb)
	})
}
