package capacity

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/internal/core/model"
)

// Bounds of a capacity placement: a fleet's worth of listed clusters, a pattern short
// enough to read, and a handful of workloads per DIG.
const (
	MaxClusters      = 10000
	MaxLabels        = 64
	MaxPattern       = 1024
	MaxWorkloads     = 50
	minInterval      = 5 * time.Second
	maxInterval      = time.Hour
	maxUnhealthy     = 24 * time.Hour
	maxCooldown      = 7 * 24 * time.Hour
	maxDrainReplicas = 100000
)

// Validate checks a capacity placement as the API receives it; its errors name the field.
// That the apps exist is the API's to check (it knows the DIG).
func (s *Spec) Validate() error {
	if err := s.Eligible.validate(); err != nil {
		return fmt.Errorf("spec.eligible.%w", err)
	}
	for _, c := range []struct {
		field string
		v     int
	}{{"minClustersBelowCapacityCeiling", s.MinClustersBelowCapacityCeiling}, {"minClusters", s.MinClusters}, {"maxClusters", s.MaxClusters}} {
		if c.v < 0 {
			return fmt.Errorf("spec.%s: %d is negative", c.field, c.v)
		}
		if c.v > MaxClusters {
			return fmt.Errorf("spec.%s: %d is above %d", c.field, c.v, MaxClusters)
		}
	}
	d := s.WithDefaults()
	if s.MaxClusters > 0 && s.MaxClusters < d.MinClusters {
		return fmt.Errorf("spec.maxClusters: %d is below minClusters (%d)", s.MaxClusters, d.MinClusters)
	}
	if s.MaxClusters > 0 && s.MaxClusters < d.MinClustersBelowCapacityCeiling {
		return fmt.Errorf("spec.maxClusters: %d is below minClustersBelowCapacityCeiling (%d): it could never be met", s.MaxClusters, d.MinClustersBelowCapacityCeiling)
	}
	if n := len(s.Eligible.Clusters); n > 0 && n < d.MinClusters {
		return fmt.Errorf("spec.minClusters: %d, but spec.eligible.clusters lists %d", d.MinClusters, n)
	}
	if err := s.validateWorkloads(); err != nil {
		return err
	}
	switch iv := time.Duration(s.EvaluationInterval); {
	case s.EvaluationInterval != 0 && (iv < minInterval || iv > maxInterval):
		return fmt.Errorf("spec.evaluationInterval: %s is not between %s and %s", iv, minInterval, maxInterval)
	case s.UnhealthyAfter != 0 && time.Duration(s.UnhealthyAfter) < time.Duration(d.EvaluationInterval):
		return fmt.Errorf("spec.unhealthyAfter: %s is shorter than the evaluation interval (%s)", time.Duration(s.UnhealthyAfter), time.Duration(d.EvaluationInterval))
	case time.Duration(s.UnhealthyAfter) > maxUnhealthy:
		return fmt.Errorf("spec.unhealthyAfter: %s is above %s", time.Duration(s.UnhealthyAfter), maxUnhealthy)
	case s.ScaleIn.Cooldown < 0 || time.Duration(s.ScaleIn.Cooldown) > maxCooldown:
		return fmt.Errorf("spec.scaleIn.cooldown: %s is not between 0 and %s", time.Duration(s.ScaleIn.Cooldown), maxCooldown)
	}
	if dr := s.ScaleIn.Drain; dr != nil {
		switch {
		case s.ScaleIn.Disabled:
			return errors.New("spec.scaleIn.drain: scale-in is disabled, there is nothing to drain")
		case dr.MaxReplicas < 1 || dr.MaxReplicas > maxDrainReplicas:
			// An HPA's maxReplicas is at least 1 (Kubernetes refuses 0).
			return fmt.Errorf("spec.scaleIn.drain.maxReplicas: %d is not between 1 and %d", dr.MaxReplicas, maxDrainReplicas)
		}
	}
	return nil
}

func (e *Eligible) validate() error {
	if len(e.Clusters) > MaxClusters {
		return fmt.Errorf("clusters: %d listed, at most %d", len(e.Clusters), MaxClusters)
	}
	seen := map[string]bool{}
	for i, c := range e.Clusters {
		if err := clusterName(c); err != nil {
			return fmt.Errorf("clusters[%d]: %w", i, err)
		}
		if seen[c] {
			return fmt.Errorf("clusters[%d]: %q is listed twice (the order is the preference)", i, c)
		}
		seen[c] = true
	}
	if len(e.ClusterLabels) > MaxLabels {
		return fmt.Errorf("clusterLabels: %d labels, at most %d", len(e.ClusterLabels), MaxLabels)
	}
	for i, l := range e.ClusterLabels {
		if l == "" || len(l) > 316 { // EMCO's cluster labels: a qualified name=value at most
			return fmt.Errorf("clusterLabels[%d]: %q is not a cluster label", i, l)
		}
	}
	if len(e.NamePattern) > MaxPattern {
		return fmt.Errorf("namePattern: %d characters, at most %d", len(e.NamePattern), MaxPattern)
	}
	if e.NamePattern != "" {
		if _, err := regexp.Compile(e.NamePattern); err != nil {
			return fmt.Errorf("namePattern %q: %v (RE2 syntax, matched against \"provider+cluster\")", e.NamePattern, err)
		}
	}
	return nil
}

// clusterName accepts "cluster" or "provider+cluster", each part a name as EMCO's.
func clusterName(c string) error {
	provider, cluster, ok := strings.Cut(c, "+")
	if !ok {
		return model.ValidateName("cluster", c)
	}
	if err := model.ValidateName("provider", provider); err != nil {
		return fmt.Errorf("%q: %w", c, err)
	}
	if err := model.ValidateName("cluster", cluster); err != nil {
		return fmt.Errorf("%q: %w", c, err)
	}
	return nil
}

func (s *Spec) validateWorkloads() error {
	switch {
	case len(s.Workloads) == 0:
		return errors.New("spec.workloads: name at least one app's Deployment and HorizontalPodAutoscaler: their state is the capacity signal")
	case len(s.Workloads) > MaxWorkloads:
		return fmt.Errorf("spec.workloads: %d workloads, at most %d", len(s.Workloads), MaxWorkloads)
	}
	seen := map[string]bool{}
	for i, w := range s.Workloads {
		at := fmt.Sprintf("spec.workloads[%d]", i)
		if seen[w.App] {
			return fmt.Errorf("%s.app: %q has a workload already", at, w.App)
		}
		seen[w.App] = true
		if w.Namespace != "" {
			if errs := validation.IsDNS1123Label(w.Namespace); len(errs) > 0 {
				return fmt.Errorf("%s.namespace %q: %s", at, w.Namespace, errs[0])
			}
		}
		for _, f := range []struct{ field, v string }{{"deployment", w.Deployment}, {"hpa", w.HPA}} {
			if f.v == "" {
				return fmt.Errorf("%s.%s: required", at, f.field)
			}
			if errs := validation.IsDNS1123Subdomain(f.v); len(errs) > 0 {
				return fmt.Errorf("%s.%s %q: %s", at, f.field, f.v, errs[0])
			}
		}
	}
	return nil
}
