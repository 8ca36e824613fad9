// Package controllers defines what a built-in intent controller is: its REST resources
// (mounted under the DIG by the API), the registrations that mean it, and its code, which
// runs as the RunController activity in temco's worker through the public contract. Each
// controller lives in its own folder below; controllers/registry lists them.
package controllers

import (
	"context"
	"slices"

	"k8s.io/client-go/rest"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
)

// Builtin is one intent controller built into temco.
type Builtin struct {
	Name string // temco's name for it, e.g. "gac"
	Type string // contract.TypePlacement or contract.TypeAction
	// Hosts are the registration names and hosts that mean this controller: EMCO users
	// name their controllers freely (hpa-placement-controller-1) but give EMCO's service
	// host (hpaplc).
	Hosts []string
	Kinds []api.ResourceKind
	// Routes, if set, adds resources whose routes need the API process's services (tac's
	// status and cancel routes reach Temporal).
	Routes func(APIDeps) []api.ResourceKind
	New    func(Deps) contract.Controller
	// FanOut: the controller's step runs as the sub-controllers registered in its own
	// registry, /v2/<Name>-controllers (dtc), each as its own step (New is not used).
	FanOut bool
	// Parent is the fan-out controller whose registry this sub-controller is registered
	// in ("" for a controller registered in /v2/controllers).
	Parent string
}

// Deps are what built-in controllers may use beyond the contract.
type Deps struct {
	Store    *store.Store
	Contexts *appctx.Store
	Keys     *seal.Keyring // opens what the API stored sealed (api.OpenSealed)
	// Admin returns a client configuration for a registered cluster ("provider+cluster")
	// with its registered credentials (hpa-plc reads nodes and pods).
	Admin func(ctx context.Context, cluster string) (*rest.Config, error)
	// Ops runs lifecycle operations on other DIGs and reads their readiness (tac's
	// worker DIGs), as the API does.
	Ops *starter.Starter
}

// Means reports whether a registration (its name and spec.host) means b.
func (b Builtin) Means(name, host string) bool {
	return name == b.Name || slices.Contains(b.Hosts, name) || (host != "" && (host == b.Name || slices.Contains(b.Hosts, host)))
}

// Lookup returns the built-in controller a registration means: one in /v2/controllers
// when parent is "", else one of parent's sub-controllers.
func Lookup(all []Builtin, parent, name, host string) (Builtin, bool) {
	for _, b := range all {
		if b.Parent == parent && b.Means(name, host) {
			return b, true
		}
	}
	return Builtin{}, false
}

// FanOuts returns the fan-out controller a registration in /v2/controllers means, if
// any: placement expands its step into its sub-controllers.
func FanOuts(all []Builtin) func(name, host string) (string, bool) {
	return func(name, host string) (string, bool) {
		b, ok := Lookup(all, "", name, host)
		return b.Name, ok && b.FanOut
	}
}

// APIDeps are the API process's services a controller's routes may use.
type APIDeps struct {
	// Workflows reaches users' workflows on temco's Temporal (or one a request names).
	Workflows *workflowmgr.Temporal
}

// API describes the built-in controllers to the API server.
func API(all []Builtin, d APIDeps) []api.Controller {
	out := make([]api.Controller, len(all))
	for i, b := range all {
		out[i] = api.Controller{Name: b.Name, Means: b.Means, Kinds: b.Kinds}
		if b.Routes != nil {
			out[i].Kinds = append(slices.Clone(b.Kinds), b.Routes(d)...)
		}
		if b.Parent != "" { // registered in its parent's registry, never named by a DIG
			out[i].Means = func(string, string) bool { return false }
		}
	}
	return out
}
