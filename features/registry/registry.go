// Package registry lists temco's side features (features.Feature): the worker registers
// the workflows and activities of those enabled, the api wires them, and replay knows
// every one's workflows.
package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/features"
	"github.com/temco/temco/features/autoscale"
	"github.com/temco/temco/features/drift"
	"github.com/temco/temco/features/health"
	"github.com/temco/temco/features/inventory"
	"github.com/temco/temco/features/notify"
	"github.com/temco/temco/features/policy"
	"github.com/temco/temco/features/preview"
	"github.com/temco/temco/features/relocate"
)

// All is every feature; adding one is one line here.
var All = []features.Feature{
	autoscale.Feature,
	drift.Feature,
	health.Feature,
	inventory.Feature,
	notify.Feature,
	policy.Feature,
	preview.Feature,
	relocate.Feature,
}

// Names are the features' names, in All's order.
func Names() []string {
	out := make([]string, len(All))
	for i, f := range All {
		out[i] = f.Name
	}
	return out
}

// Enabled is All without the features named in disabled; a name that is no feature's is
// refused, with the names there are.
func Enabled(disabled []string) ([]features.Feature, error) {
	names := Names()
	for _, d := range disabled {
		if !slices.Contains(names, d) {
			return nil, fmt.Errorf("no feature is called %q: the features are %s", d, strings.Join(names, ", "))
		}
	}
	var out []features.Feature
	for _, f := range All {
		if !slices.Contains(disabled, f.Name) {
			out = append(out, f)
		}
	}
	return out, nil
}
