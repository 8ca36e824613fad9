// Package contracttest gives controller authors an in-memory contract.Context for unit
// tests: it serves the apps, resources and clusters it was given and records the edits.
package contracttest

import (
	"context"
	"fmt"

	"github.com/temco/temco/contract"
)

// Fake is an in-memory contract.Context.
type Fake struct {
	In        contract.Input
	AppList   []contract.App
	Objects   map[string][]contract.Resource // by app (every cluster)
	ClusterOf map[string][]contract.Cluster  // by provider
	Edits     []contract.Edit
	Workflows []contract.Workflow
}

var _ contract.Context = (*Fake)(nil)

func (f *Fake) Input() contract.Input { return f.In }

func (f *Fake) Apps(context.Context) ([]contract.App, error) { return f.AppList, nil }

func (f *Fake) Resources(_ context.Context, app, _ string) ([]contract.Resource, error) {
	for _, a := range f.AppList {
		if a.Name == app {
			return f.Objects[app], nil
		}
	}
	return nil, fmt.Errorf("no app %q in the context", app)
}

func (f *Fake) Clusters(_ context.Context, provider, label string) ([]contract.Cluster, error) {
	var out []contract.Cluster
	for _, c := range f.ClusterOf[provider] {
		if label == "" || contains(c.Labels, label) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *Fake) Edit(edits ...contract.Edit) error {
	f.Edits = append(f.Edits, edits...)
	return nil
}

func (f *Fake) StartWorkflows(w ...contract.Workflow) error {
	if err := contract.CheckWorkflows(f.In, w); err != nil {
		return err
	}
	f.Workflows = append(f.Workflows, w...)
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
