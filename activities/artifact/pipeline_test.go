package artifact

import (
	"context"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// runPipeline runs the pipeline for ref as workflows/artifact does, returning how many
// artifacts it fetched, FetchArtifact's error and the context's header after it.
func runPipeline(t *testing.T, env *testsuite.TestActivityEnvironment, a *Activities, ref lifecycle.ContextRef) (int, error, *appctx.Context) {
	t.Helper()
	v, err := env.ExecuteActivity(a.ResolveArtifacts, ref)
	if err != nil {
		t.Fatal(err)
	}
	var plan lifecycle.ArtifactPlan
	if err := v.Get(&plan); err != nil {
		t.Fatal(err)
	}
	var ferr error
	for _, r := range plan.Fetch {
		if _, err := env.ExecuteActivity(a.FetchArtifact, lifecycle.FetchInput{ContextRef: ref, Artifact: r}); err != nil {
			ferr = err
		}
	}
	h, err := a.Contexts.Get(context.Background(), ref.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	return len(plan.Fetch), ferr, h
}
