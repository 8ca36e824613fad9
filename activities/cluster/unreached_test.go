package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// skipping applies every placed object but those named in skip, and reports no error:
// an apply with a fault.
type skipping struct {
	target
	skip map[string]bool
}

func (s skipping) apply(r *run) error {
	for _, p := range r.placements() {
		for i := range p.Resources {
			if !s.skip[p.Resources[i].Name] {
				r.settle(&p.Resources[i], lifecycle.ResApplied, "")
			}
		}
	}
	return r.progress(r.ctx)
}

func (s skipping) remove(r *run, _ map[string][]int, _ *placed) error {
	for _, p := range r.placements() {
		for i := range p.Resources {
			if !s.skip[p.Resources[i].Name] {
				r.settle(&p.Resources[i], lifecycle.ResDeleted, "")
			}
		}
	}
	return r.progress(r.ctx)
}

// An apply (or removal) that returns without error yet left an object untouched fails
// it, saying so, and one whose context came without an app placed on the cluster fails
// the cluster for good, naming the app, instead of counting the cluster done.
func TestWhatAClusterActivitySkippedFails(t *testing.T) {
	ctx := context.Background()
	s, err := appctx.New(ctx, testenv.Database(t, ferret, "unreached"))
	if err != nil {
		t.Fatal(err)
	}
	refs := []string{"cm0", "cm1", "cm2"}
	app := &appctx.App{Name: "a"}
	p := &appctx.ClusterApp{App: "a", Cluster: "p+c1"}
	for _, name := range refs {
		ref := appctx.Ref{Version: "v1", Kind: "ConfigMap", Name: name}
		app.Objects = append(app.Objects, appctx.Object{Ref: ref, Manifest: "{}"})
		p.Resources = append(p.Resources, appctx.ResourceStatus{Ref: ref, Status: lifecycle.ResPending})
	}
	header := &appctx.Context{ID: "c1", Apps: []string{"a"}}
	if err := s.Create(ctx, header); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPlacement(ctx, "c1", []*appctx.ClusterApp{p}, map[string]int{"p+c1": 0}); err != nil {
		t.Fatal(err)
	}
	newRun := func(h *appctx.Context, apps map[string]*appctx.App, p *appctx.ClusterApp, skip ...string) *run {
		r := &run{ctx: ctx, contexts: s, header: h, apps: apps, byApp: map[string]*appctx.ClusterApp{"a": p},
			target: skipping{skip: map[string]bool{}}}
		for _, name := range skip {
			r.target.(skipping).skip[name] = true
		}
		return r
	}

	res, err := newRun(header, map[string]*appctx.App{"a": app}, p, "cm1").applyAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 2 || res.Failed != 1 {
		t.Errorf("result %+v, want 2 done and 1 failed", res)
	}
	stored, err := s.ClusterApps(ctx, "c1", "p+c1")
	if err != nil || len(stored) != 1 || len(stored[0].Resources) != len(refs) {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	for _, r := range stored[0].Resources {
		want := lifecycle.ResApplied
		if r.Name == "cm1" {
			want = lifecycle.ResFailed
			if !strings.Contains(r.Error, "not applied") {
				t.Errorf("cm1's error %q does not say it was not applied", r.Error)
			}
		}
		if r.Status != want {
			t.Errorf("%s stored %s, want %s", r.Name, r.Status, want)
		}
	}

	// The context as a cache once held it: a header listing no apps, none rendered.
	bare := &appctx.Context{ID: "c1"}
	unlisted := &appctx.ClusterApp{App: "a", Cluster: "p+c1", Unlisted: true}
	res, err = newRun(bare, map[string]*appctx.App{}, unlisted).applyAll(ctx)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != lifecycle.ErrApplyFailed {
		t.Fatalf("apply of a cluster whose app was not loaded: %+v, %v; want a non-retryable %s", res, err, lifecycle.ErrApplyFailed)
	}
	for _, says := range []string{"apps a ", "cluster p+c1", "context c1"} {
		if !strings.Contains(appErr.Message(), says) {
			t.Errorf("error %q does not name %q", appErr.Message(), says)
		}
	}
	if res.Done != 0 {
		t.Errorf("result %+v counts objects done", res)
	}

	// An apply that reached everything fails nothing.
	res, err = newRun(header, map[string]*appctx.App{"a": app}, p).applyAll(ctx)
	if err != nil || res.Done != len(refs) || res.Failed != 0 {
		t.Errorf("a complete apply: %+v, %v", res, err)
	}

	// So with removals: an object left as it was fails ...
	r := newRun(header, map[string]*appctx.App{"a": app}, p, "cm2")
	if err := r.remove(ctx, nil, nil); err != nil || r.result.Done != 2 || r.result.Failed != 1 {
		t.Errorf("a removal that skipped cm2: %+v, %v", r.result, err)
	}
	if p.Resources[2].Status != lifecycle.ResFailed || !strings.Contains(p.Resources[2].Error, "not deleted") {
		t.Errorf("cm2 after a removal that skipped it: %+v", p.Resources[2])
	}
	// ... as does a removal whose context came without the app of applied objects ...
	applied := &appctx.ClusterApp{App: "a", Cluster: "p+c1", Resources: []appctx.ResourceStatus{{Ref: p.Resources[0].Ref, Status: lifecycle.ResApplied}}}
	err = newRun(bare, map[string]*appctx.App{}, applied).remove(ctx, nil, nil)
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != lifecycle.ErrDeleteFailed || !strings.Contains(appErr.Message(), "apps a ") {
		t.Errorf("removal of a cluster whose app was not loaded: %v; want a non-retryable %s naming the app", err, lifecycle.ErrDeleteFailed)
	}
	// ... but where nothing was applied (a context whose preparation failed), there is
	// nothing to remove.
	if err := newRun(bare, map[string]*appctx.App{}, unlisted).remove(ctx, nil, nil); err != nil {
		t.Errorf("removal of a placement never applied: %v", err)
	}
}
