// Package relocate is the built-in Relocate workflow (flow), which moves one app of an
// instantiated DIG from one cluster to another without downtime, and its steps (work).
// Operators start it through a workflow intent (controllers/workflowmgr), which is why
// its name and parameters' key stay in lifecycle (WorkflowRelocate, RelocateParamsKey);
// the DIG's update it waits for is the core's (activities/operation's UpdateDIG).
package relocate

import (
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/relocate/flow"
	"github.com/temco/temco/features/relocate/work"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Feature is relocate. Switched off, a workflow intent may still start Relocate, but no
// worker runs it (its workflow tasks fail until one does).
var Feature = features.Feature{
	Name:       "relocate",
	Workflows:  map[string]any{lifecycle.WorkflowRelocate: flow.Relocate},
	Activities: work.Register,
	TakeOver:   []string{lifecycle.WorkflowRelocate},
}
