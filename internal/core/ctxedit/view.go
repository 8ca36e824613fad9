package ctxedit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ErrNoControllers: the context was placed without controllers, so it has no steps.
var ErrNoControllers = errors.New("no controller works on this context")

// Load computes a context as the controller at step sees it: rendering and placement with
// the edits of the steps before (every step's when step < 0).
func Load(ctx context.Context, contexts *appctx.Store, ctxID string, step int) (*State, error) {
	h, err := contexts.Get(ctx, ctxID)
	if err != nil {
		return nil, err
	}
	rendered, err := contexts.Apps(ctx, h)
	if err != nil {
		return nil, err
	}
	groups, err := contexts.Groups(ctx, ctxID)
	if err != nil {
		return nil, err
	}
	if groups == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoControllers, ctxID)
	}
	layers, err := contexts.Layers(ctx, ctxID, step)
	if err != nil {
		return nil, err
	}
	s, err := New(h.Apps, rendered, groups, func(app string) map[string]string {
		return map[string]string{lifecycle.DeploymentIDLabel: h.Instance + "-" + app}
	})
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		if err := s.Apply(l.Controller, l.Type, l.Edits); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Clone copies the state for edits that must not show in it (objects are immutable values).
func (s *State) Clone() *State {
	c := &State{Order: slices.Clone(s.Order), Apps: make(map[string]*App, len(s.Apps)), labels: s.labels}
	for k, a := range s.Apps {
		ca := *a
		ca.Groups = make([][]string, len(a.Groups))
		for i, g := range a.Groups {
			ca.Groups[i] = slices.Clone(g)
		}
		ca.Objects = slices.Clone(a.Objects)
		ca.PerCluster = maps.Clone(a.PerCluster)
		c.Apps[k] = &ca
	}
	return c
}

// Clusters answers which clusters a provider has (with a label).
type Clusters func(ctx context.Context, provider, label string) ([]contract.Cluster, error)

// View is a contract.Context over a state: reads show the steps before, edits are checked
// against a copy and collected.
type View struct {
	in        contract.Input
	seen      *State
	next      *State
	clusters  Clusters
	Edits     []contract.Edit
	Workflows []contract.Workflow
}

// NewView makes the view of the controller step in over s.
func NewView(in contract.Input, s *State, clusters Clusters) *View {
	return &View{in: in, seen: s, clusters: clusters}
}

var _ contract.Context = (*View)(nil)

func (v *View) Input() contract.Input { return v.in }

// Apps lists the apps in apply order.
func (v *View) Apps(context.Context) ([]contract.App, error) { return AppsOf(v.seen), nil }

// AppsOf describes the apps of a state.
func AppsOf(s *State) []contract.App {
	out := make([]contract.App, 0, len(s.Order))
	for _, name := range s.Order {
		a := s.Apps[name]
		out = append(out, contract.App{Name: name, Clusters: a.Clusters(), Groups: a.Groups})
	}
	return out
}

// Resources returns an app's objects on a cluster ("" for every cluster's).
func (v *View) Resources(_ context.Context, app, cluster string) ([]contract.Resource, error) {
	return ResourcesOf(v.seen, app, cluster)
}

// ResourcesOf returns an app's objects on a cluster of a state.
func ResourcesOf(s *State, app, cluster string) ([]contract.Resource, error) {
	a := s.Apps[app]
	if a == nil {
		return nil, errorf("the context has no app %q", app)
	}
	objs := a.ObjectsOn(cluster)
	out := make([]contract.Resource, len(objs))
	for i, o := range objs {
		apiVersion := o.Version
		if o.Group != "" {
			apiVersion = o.Group + "/" + o.Version
		}
		out[i] = contract.Resource{APIVersion: apiVersion, Kind: o.Kind, Name: o.Name, Namespace: o.Namespace,
			Manifest: json.RawMessage(o.Manifest)}
	}
	return out, nil
}

func (v *View) Clusters(ctx context.Context, provider, label string) ([]contract.Cluster, error) {
	return v.clusters(ctx, provider, label)
}

// Edit checks the edits against a copy of the state and collects them.
func (v *View) Edit(edits ...contract.Edit) error {
	if v.in.Hook != contract.HookRun {
		return errorf("controller %s: the %s hook sees the deployed context and may not edit it", v.in.Controller, v.in.Hook)
	}
	if v.next == nil {
		v.next = v.seen.Clone()
	}
	if err := v.next.Apply(v.in.Controller, v.in.Type, edits); err != nil {
		return err
	}
	v.Edits = append(v.Edits, edits...)
	return nil
}

// StartWorkflows collects the workflows the controller asks the operation to run.
func (v *View) StartWorkflows(w ...contract.Workflow) error {
	if err := contract.CheckWorkflows(v.in, w); err != nil {
		return err
	}
	v.Workflows = append(v.Workflows, w...)
	return nil
}
