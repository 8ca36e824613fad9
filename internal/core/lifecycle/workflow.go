package lifecycle

import (
	"maps"
	"slices"

	"go.temporal.io/sdk/workflow"
)

// Workflow is one of temco's workflows that the workflows start as a child, with what it
// takes and what it returns, declared beside its name's constant: a workflow starts it
// with ExecuteChild, and the compiler holds the call to In and Out. The function that
// implements it has its name (workers.Workflows registers it under that name: ApplyBatch
// is deploy.ApplyBatch); the workers' tests hold every one declared to be registered.
type Workflow[In, Out any] struct{ name string }

// children holds the names of the Workflows declared.
var children = map[string]bool{}

// DeclareChild declares the child workflow name: the core's beside their names in ops.go
// and migrate.go, each feature's in its flow package.
func DeclareChild[In, Out any](name string) Workflow[In, Out] {
	if children[name] {
		panic("child workflow " + name + " is declared twice")
	}
	children[name] = true
	return Workflow[In, Out]{name: name}
}

// ChildWorkflows are the names of every child Workflow declared, sorted: what the worker
// must register besides the workflows started from outside.
func ChildWorkflows() []string { return slices.Sorted(maps.Keys(children)) }

// Name is the workflow's type name, as histories record it.
func (w Workflow[In, Out]) Name() string { return w.name }

// ExecuteChild starts the workflow with in as a child, under ctx's child workflow options.
func (w Workflow[In, Out]) ExecuteChild(ctx workflow.Context, in In) ChildFuture[Out] {
	return ChildFuture[Out]{workflow.ExecuteChildWorkflow(ctx, w.name, in)}
}

// ChildFuture is a child workflow's result to come. Its ChildWorkflowFuture is what a
// selector takes, and what signals the child.
type ChildFuture[Out any] struct{ workflow.ChildWorkflowFuture }

// Get waits for the child and puts its result in out (nil: only its error matters).
func (f ChildFuture[Out]) Get(ctx workflow.Context, out *Out) error {
	if out == nil {
		return f.ChildWorkflowFuture.Get(ctx, nil)
	}
	return f.ChildWorkflowFuture.Get(ctx, out)
}
