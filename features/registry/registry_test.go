package registry

import (
	"slices"
	"testing"

	"github.com/temco/temco/features"
)

// Each feature has a name of its own, and something for the worker or the api; its part
// of the api has its name.
func TestEveryFeatureHasANameOfItsOwnAndDoesSomething(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range All {
		if f.Name == "" || seen[f.Name] {
			t.Errorf("feature %q: a name is needed, once", f.Name)
		}
		seen[f.Name] = true
		if len(f.Workflows) == 0 && f.Activities == nil && f.API == nil && f.Serve == nil {
			t.Errorf("feature %s has nothing for the worker or the api", f.Name)
		}
		if f.API != nil && f.API(features.Mounting{}).Name != f.Name {
			t.Errorf("feature %s: its api.Extension, switched off, is named %q", f.Name, f.API(features.Mounting{}).Name)
		}
	}
}

// Enabled leaves out the features switched off, and refuses a name that is no feature's.
func TestEnabledLeavesOutTheDisabledAndRefusesUnknownNames(t *testing.T) {
	on, err := Enabled([]string{"drift", "preview"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range on {
		names = append(names, f.Name)
	}
	if want := []string{"autoscale", "health", "inventory", "notify", "policy", "relocate"}; !slices.Equal(names, want) {
		t.Errorf("on: %v, want %v", names, want)
	}
	if all, _ := Enabled(nil); len(all) != len(All) {
		t.Errorf("nothing disabled: %d features on of %d", len(all), len(All))
	}
	_, err = Enabled([]string{"drift", "autoscaler"})
	want := `no feature is called "autoscaler": the features are autoscale, drift, health, inventory, notify, policy, preview, relocate`
	if err == nil || err.Error() != want {
		t.Errorf("unknown name: %v, want %s", err, want)
	}
}
