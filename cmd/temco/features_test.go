package main

import (
	"slices"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/registry"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/starter"
	"github.com/temco/temco/workers"
)

// A feature's name that is no feature's stops api and worker at their start, listing the
// features there are.
func TestAnUnknownFeatureIsRefused(t *testing.T) {
	want := `--disable-features (TEMCO_DISABLE_FEATURES): no feature is called "drfit": the features are autoscale, drift, health, inventory, notify, policy, preview, relocate`
	ac := apiConfigOf(t, "--key-file", "keys", "--disable-features", "drift,drfit")
	if _, err := ac.check(); err == nil || err.Error() != want {
		t.Errorf("api: %v\nwant %s", err, want)
	}
	wc := workerConfigOf(t, "--key-file", "keys", "--disable-features", "drfit")
	if _, err := wc.check(); err == nil || err.Error() != want {
		t.Errorf("worker: %v\nwant %s", err, want)
	}
}

// A feature switched off (here from the environment) has none of its workflows and
// activities on the worker, and its routes in the api without its starter; the others
// have theirs.
func TestADisabledFeatureIsNeitherRegisteredNorWired(t *testing.T) {
	t.Setenv("TEMCO_DISABLE_FEATURES", "drift,preview")
	wc := workerConfigOf(t, "--key-file", "keys")
	wl, err := wc.check()
	if err != nil {
		t.Fatal(err)
	}
	r := &registered{names: map[string]bool{}}
	workers.Register(r, workers.Deps{}, wl.features)
	for name, want := range map[string]bool{"Drift": false, "DriftBatch": false, "PlanDriftCheck": false, "DetectDrift": false,
		"PreviewRollout": false, "DiffPreview": false, "Instantiate": true, "ApplyCluster": true, "Autoscale": true,
		"CapacitySignals": true, "ClusterHealth": true, "Relocate": true, "UpdateDIG": true} {
		if r.names[name] != want {
			t.Errorf("%s registered: %v, want %v", name, r.names[name], want)
		}
	}
	ac := apiConfigOf(t, "--key-file", "keys")
	al, err := ac.check()
	if err != nil {
		t.Fatal(err)
	}
	// Every feature with a part in the api has its Extension, mounted whether on or off
	// (api's features' tests: a feature off answers saying so).
	var names []string
	for _, x := range extensions(registry.All, features.Mounting{Starter: &starter.Starter{}}, al.features) {
		names = append(names, x.Name)
		if x.Mount == nil {
			t.Errorf("extension %s mounts nothing", x.Name)
		}
	}
	if want := []string{"autoscale", "drift", "inventory", "notify", "policy", "preview"}; !slices.Equal(names, want) {
		t.Errorf("extensions %v, want %v", names, want)
	}
	// Those on are built with the starter, those off without; all with the configuration.
	st, engines := &starter.Starter{}, egress.MustParse("opa.example.com")
	got := map[string]features.Mounting{}
	var all []features.Feature
	for _, name := range []string{"on", "off", "worker-only"} {
		f := features.Feature{Name: name}
		if name != "worker-only" {
			f.API = func(in features.Mounting) api.Extension { got[name] = in; return api.Extension{Name: name} }
		}
		all = append(all, f)
	}
	if n := len(extensions(all, features.Mounting{Starter: st, PolicyEngines: engines}, all[:1])); n != 2 {
		t.Errorf("%d extensions, want 2", n)
	}
	if got["on"].Starter != st || got["off"].Starter != nil || got["on"].PolicyEngines != engines || got["off"].PolicyEngines != engines {
		t.Errorf("built with %+v", got)
	}
}

// registered is a worker.Registry that keeps the names registered.
type registered struct {
	worker.Registry
	names map[string]bool
}

func (r *registered) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.names[o.Name] = true
}

func (r *registered) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	r.names[o.Name] = true
}
