// Package actions runs the built-in intent controllers: the RunController activity gives a
// controller the view of the new context at its step and stores its edits as that step's
// layer. External controllers implement the same activity on their own task queue
// (contract.Serve) and reach the view through the API.
package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/ctxedit"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/model"
	"github.com/temco/temco/internal/store"
)

// Activities runs built-in controllers.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Builtin  []controllers.Builtin
	Deps     controllers.Deps
}

// RunController runs the controller registered as in.Controller over the context.
func (a *Activities) RunController(ctx context.Context, in contract.Input) (contract.Result, error) {
	b, err := a.builtin(ctx, in.Controller)
	if err != nil {
		return contract.Result{}, err
	}
	s, err := ctxedit.Load(ctx, a.Contexts, in.ContextID, in.Step)
	if err != nil {
		return contract.Result{}, Refused(err)
	}
	v := ctxedit.NewView(in, s, ClusterSource(a.Store))
	stop := heartbeat(ctx)
	err = b.New(a.Deps).Run(ctx, v)
	stop()
	if err != nil {
		return contract.Result{}, Refused(err)
	}
	l := &appctx.Layer{Context: in.ContextID, Step: in.Step, Controller: in.Controller, Type: in.Type, Edits: v.Edits}
	return contract.Result{Edits: len(v.Edits)}, a.Contexts.PutLayer(ctx, l)
}

// builtin finds the built-in controller a registration means.
func (a *Activities) builtin(ctx context.Context, name string) (controllers.Builtin, error) {
	d, err := a.Store.Get(ctx, "/controllers/"+name)
	if err != nil {
		return controllers.Builtin{}, err
	}
	sp, err := model.Decode[model.ControllerSpec](d.Body)
	if err != nil {
		return controllers.Builtin{}, err
	}
	b, ok := controllers.Lookup(a.Builtin, name, sp.Spec.Host)
	if !ok {
		return b, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"controller %q is not built into temco and its registration names no taskQueue of an external controller worker",
			name), lifecycle.ErrInvalidInput, nil)
	}
	return b, nil
}

// Refused turns a controller's refusal and an edit it may not make into the operation's
// failure (not retried); other errors are returned to be retried.
func Refused(err error) error {
	var r *contract.Refusal
	var e *ctxedit.Error
	if errors.As(err, &r) || errors.As(err, &e) {
		return temporal.NewNonRetryableApplicationError(err.Error(), lifecycle.ErrInvalidInput, nil)
	}
	return err
}

// heartbeat keeps a long controller run alive for the heartbeat timeout, so that a worker
// that dies is noticed quickly; the returned func stops it.
func heartbeat(ctx context.Context) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// ClusterSource answers the view's cluster questions from the resource store.
func ClusterSource(st *store.Store) ctxedit.Clusters {
	return func(ctx context.Context, provider, label string) ([]contract.Cluster, error) {
		scope := "/cluster-providers/" + provider
		labels, err := st.List(ctx, store.Query{Scope: scope, Kind: model.KindClusterLabel})
		if err != nil {
			return nil, err
		}
		byCluster := map[string][]string{}
		for _, d := range labels {
			name := d.Parent[strings.LastIndex(d.Parent, "/")+1:]
			byCluster[name] = append(byCluster[name], d.Name)
		}
		docs, err := st.List(ctx, store.Query{Parent: scope, Kind: model.KindCluster})
		if err != nil {
			return nil, err
		}
		var out []contract.Cluster
		for _, d := range docs {
			c := contract.Cluster{Provider: provider, Name: d.Name, Labels: byCluster[d.Name]}
			if label == "" || slices.Contains(c.Labels, label) {
				out = append(out, c)
			}
		}
		return out, nil
	}
}
