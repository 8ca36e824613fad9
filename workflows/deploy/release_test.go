package deploy

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workflows/localfirst"
)

// Runs started under release 1 retried finish only as a local activity: replaying one
// with localfirst's switch to a regular activity would schedule an activity its history
// does not have.
func TestFinishOfAStoreThatKeepsRefusingFollowsTheRunsRelease(t *testing.T) {
	failures := localfirst.Attempts // then the store answers
	for name, c := range map[string]struct {
		release workflow.Version
		local   []bool // per attempt, whether it ran locally
	}{
		"release 1": {releaseGate, slices.Repeat([]bool{true}, failures+1)},
		"release 2": {releaseLocalFirst, append(slices.Repeat([]bool{true}, localfirst.Attempts), false)},
	} {
		t.Run(name, func(t *testing.T) {
			var local []bool
			err := run(t, newFakes(), Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
				env.OnActivity(lifecycle.FinishOperation.Name(), mock.Anything, mock.Anything).Return(
					func(ctx context.Context, _ lifecycle.FinishInput) error {
						local = append(local, activity.GetInfo(ctx).IsLocalActivity)
						if len(local) <= failures {
							return errors.New("store unavailable")
						}
						return nil
					})
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(local, c.local) {
				t.Errorf("finish attempts (local?) %v, want %v", local, c.local)
			}
		})
	}
}

// From release 6 an instantiate renders the charts that read .Capabilities for its
// clusters once prepared (after the controllers' commit); runs of earlier releases do not.
// From release 9 it does only when RenderApps answered that some chart reads them.
func TestRenderVariantsFollowsTheRunsRelease(t *testing.T) {
	for name, c := range map[string]struct {
		release workflow.Version
		reading int
		want    int
	}{
		"release 5": {releaseStages, 1, 0}, "release 6": {releaseVariants, 1, 1},
		"release 8, no chart reads": {releaseArtifacts, 0, 1},
		"release 9, no chart reads": {releaseRendersRead, 0, 0}, "release 9, a chart reads": {releaseRendersRead, 1, 1},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakes()
			f.reading = c.reading
			f.plan.Controllers = []lifecycle.Controller{{Name: "gac", Intent: "i"}}
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
			})
			if err != nil {
				t.Fatal(err)
			}
			if f.variants != c.want {
				t.Errorf("RenderVariants ran %d times, want %d", f.variants, c.want)
			}
		})
	}
}
