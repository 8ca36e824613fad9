// Package inventory holds temco's cluster inventories: a hub cluster whose ClusterProfile
// objects (SIG Multicluster's cluster inventory API, multicluster.x-k8s.io/v1alpha1) temco
// keeps its clusters of one provider in step with, and where it publishes the clusters each
// DIG is placed on as PlacementDecisions (docs/inventory.md). This package is the resource's
// spec and the pure translations: a profile into a temco cluster's labels and kubeconfig,
// a DIG's clusters into PlacementDecision slices. It does no I/O.
package inventory

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/rollout"
)

// Spec is the spec of a cluster inventory resource; its hub's kubeconfig is the resource's
// file, sealed as a cluster's.
type Spec struct {
	// Namespace holds the ClusterProfiles, the Secrets their access providers name, and the
	// PlacementDecisions temco writes.
	Namespace string `json:"namespace"`
	// ClusterManager, when set, keeps only the profiles labelled x-k8s.io/cluster-manager
	// with it.
	ClusterManager string `json:"clusterManager,omitempty"`
	// SyncInterval is how often the hub is read and the decisions written (default 30s,
	// 5s to 1h).
	SyncInterval rollout.Duration `json:"syncInterval,omitempty"`
}

// DefaultSyncInterval is the interval of a spec that names none.
const DefaultSyncInterval = 30 * time.Second

// WithDefaults returns s with every unset field at its default.
func (s Spec) WithDefaults() Spec {
	if s.SyncInterval == 0 {
		s.SyncInterval = rollout.Duration(DefaultSyncInterval)
	}
	return s
}

// Validate checks a spec, naming the field at fault.
func (s Spec) Validate() error {
	if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
		return fmt.Errorf("spec.namespace %q: %s", s.Namespace, strings.Join(errs, "; "))
	}
	if s.ClusterManager != "" {
		if errs := validation.IsValidLabelValue(s.ClusterManager); len(errs) > 0 {
			return fmt.Errorf("spec.clusterManager %q: %s", s.ClusterManager, strings.Join(errs, "; "))
		}
	}
	if d := time.Duration(s.SyncInterval); d != 0 && (d < 5*time.Second || d > time.Hour) {
		return fmt.Errorf("spec.syncInterval: %s is outside 5s to 1h", d)
	}
	return nil
}

// Labels a cluster from an inventory carries instead of its profile's when the profile
// is unhealthy or gone: placements by label no longer select it, and capacity placements
// do not count it eligible. Its objects stay until an operation takes them away.
const (
	LabelUnhealthy = "inventory-unhealthy"
	LabelRemoved   = "inventory-removed"
)

// unsafe are the characters a temco label may not hold.
var unsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Labels turns a profile's labels and properties into temco cluster labels: "key_value"
// (a label's or property's name and value, what a temco label may not hold made "_"), or
// "key" for an empty value. Those that still are not valid names (too long) are left out.
func Labels(labels map[string]string, properties map[string]string) []string {
	var out []string
	add := func(k, v string) {
		l := unsafe.ReplaceAllString(k, "_")
		if v != "" {
			l += "_" + unsafe.ReplaceAllString(v, "_")
		}
		l = strings.Trim(l, "_.-")
		if model.ValidateName("label", l) == nil && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	for k, v := range labels {
		add(k, v)
	}
	for k, v := range properties {
		add(k, v)
	}
	slices.Sort(out)
	return out
}
