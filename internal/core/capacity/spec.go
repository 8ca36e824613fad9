// Package capacity holds temco's capacity placements: the resource an operator puts under
// a DIG to have the clusters its workloads run on chosen, and changed, from the clusters'
// capacity and the workloads' load, after Google's Multi-Cluster Orchestrator
// (docs/autoscaling.md): which clusters are eligible and in what order, how many must stay
// below their capacity ceiling, and which Deployment and HorizontalPodAutoscaler of each
// app say so. Like internal/core/rollout it does no I/O, so workflows can import it.
package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/temco/temco/internal/core/rollout"
)

// Spec is the spec of a capacity placement resource.
type Spec struct {
	// Eligible are the clusters the workloads may run on, in order of preference.
	Eligible Eligible `json:"eligible"`
	// MinClustersBelowCapacityCeiling: when fewer active clusters than this can still take
	// more of the workload's pods, the next eligible cluster is added. Default 1.
	MinClustersBelowCapacityCeiling int `json:"minClustersBelowCapacityCeiling,omitempty"`
	// MinClusters (default 1) and MaxClusters (0: as many as are eligible) bound the
	// active clusters.
	MinClusters int `json:"minClusters,omitempty"`
	MaxClusters int `json:"maxClusters,omitempty"`
	// Workloads name, per app of the DIG, the objects whose state says whether a cluster
	// is at its capacity ceiling.
	Workloads []Workload `json:"workloads"`
	// EvaluationInterval is how often the signals are read (default 30s, 5s to 1h).
	EvaluationInterval rollout.Duration `json:"evaluationInterval,omitempty"`
	// UnhealthyAfter is how long an active cluster may be unreachable before it is
	// UNHEALTHY and replaced by the next eligible one (default 2m, at least the interval).
	UnhealthyAfter rollout.Duration `json:"unhealthyAfter,omitempty"`
	ScaleIn        ScaleIn          `json:"scaleIn,omitempty"`
}

// UnmarshalJSON decodes as encoding/json does, but names the field at fault, which
// encoding/json does not do for a field whose own decoder (a Duration) refused its value.
func (s *Spec) UnmarshalJSON(b []byte) error {
	type plain Spec
	err := json.Unmarshal(b, (*plain)(s))
	if err == nil {
		return nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		one, _ := json.Marshal(map[string]json.RawMessage{k: raw[k]})
		var field plain
		if e := json.Unmarshal(one, &field); e != nil {
			var te *json.UnmarshalTypeError
			if errors.As(e, &te) {
				return fmt.Errorf("spec.%s: expected %s, not %s", te.Field, te.Type, te.Value)
			}
			return fmt.Errorf("spec.%s: %v", k, e)
		}
	}
	return err
}

// Eligible selects the eligible clusters: those listed, in that order (none listed: every
// cluster of the DIG's logical cloud, by name), that carry every label of ClusterLabels
// and whose "provider+cluster" NamePattern (RE2) matches.
type Eligible struct {
	// Clusters are "provider+cluster", or "cluster" when one provider has it.
	Clusters      []string `json:"clusters,omitempty"`
	ClusterLabels []string `json:"clusterLabels,omitempty"`
	NamePattern   string   `json:"namePattern,omitempty"`
}

// Workload is one app's Deployment and HorizontalPodAutoscaler on each cluster.
type Workload struct {
	App string `json:"app"`
	// Namespace defaults to the logical cloud's namespace on each cluster.
	Namespace  string `json:"namespace,omitempty"`
	Deployment string `json:"deployment"`
	HPA        string `json:"hpa"`
}

// ScaleIn says whether and how clusters leave when the load drops.
type ScaleIn struct {
	// Disabled keeps every cluster added until it becomes ineligible or unhealthy.
	Disabled bool `json:"disabled,omitempty"`
	// Cooldown: a cluster added is not scaled in before it has run this long (default 10m).
	Cooldown rollout.Duration `json:"cooldown,omitempty"`
	// Drain, when set, lowers the HPA's maximum on a cluster being scaled in to
	// Drain.MaxReplicas, so its pods move to the others before it is removed; without it a
	// cluster is removed once its HPA is at its minimum and wants fewer (the seed's only way).
	Drain *Drain `json:"drain,omitempty"`
}

// Drain is how a cluster being scaled in is emptied.
type Drain struct {
	MaxReplicas int `json:"maxReplicas"`
}

// Defaults.
const (
	DefaultEvaluationInterval = 30 * time.Second
	DefaultUnhealthyAfter     = 2 * time.Minute
	DefaultCooldown           = 10 * time.Minute
)

// WithDefaults returns s with every unset field at its default.
func (s Spec) WithDefaults() Spec {
	s.MinClustersBelowCapacityCeiling = max(s.MinClustersBelowCapacityCeiling, 1)
	s.MinClusters = max(s.MinClusters, 1)
	if s.EvaluationInterval == 0 {
		s.EvaluationInterval = rollout.Duration(DefaultEvaluationInterval)
	}
	if s.UnhealthyAfter == 0 {
		s.UnhealthyAfter = rollout.Duration(max(DefaultUnhealthyAfter, time.Duration(s.EvaluationInterval)))
	}
	if s.ScaleIn.Cooldown == 0 {
		s.ScaleIn.Cooldown = rollout.Duration(DefaultCooldown)
	}
	return s
}
