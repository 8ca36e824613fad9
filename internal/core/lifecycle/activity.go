package lifecycle

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"
)

// Activity is an activity the workflows call, declared (Declare) in activities.go or in a
// feature's flow package with what it takes and what it returns. From a call to its code:
// its Implementer (By) names the package and the struct, whose method of the activity's
// name implements it. A workflow calls it with
// Execute, that package registers the method with Register, and the compiler holds both
// to In and Out. Its name is what histories record.
type Activity[In, Out any] struct {
	name string
	by   Implementer
}

// None is the result of an activity that returns only an error.
type None struct{}

// Implementer is the struct whose methods implement some activities: its package, from
// the module's root, and its name.
type Implementer struct{ Package, Struct string }

// Declaration is what an activity's declaration says, whatever its types.
type Declaration struct {
	Name string
	By   Implementer
}

// declared holds every Activity declared, by name.
var declared = map[string]any{}

// Declare declares the activity name, implemented by by's method of that name: the core's
// in activities.go, each feature's in its flow package (features/<name>/flow).
func Declare[In, Out any](by Implementer, name string) Activity[In, Out] {
	if _, twice := declared[name]; twice {
		panic("activity " + name + " is declared twice")
	}
	a := Activity[In, Out]{name: name, by: by}
	declared[name] = a
	return a
}

// Declarations are every activity declared, by name: what the worker must register.
func Declarations() map[string]Declaration {
	out := make(map[string]Declaration, len(declared))
	for name, a := range declared {
		out[name] = a.(interface{ declaration() Declaration }).declaration()
	}
	return out
}

// Named is the activity declared as name with In and Out (false: none is): one whose name
// travels in a workflow's input (BatchInput.Activity).
func Named[In, Out any](name string) (Activity[In, Out], bool) {
	a, ok := declared[name].(Activity[In, Out])
	return a, ok
}

// Name is the activity's type name, as histories record it.
func (a Activity[In, Out]) Name() string { return a.name }

// By is the struct whose method of the activity's name implements it.
func (a Activity[In, Out]) By() Implementer { return a.by }

func (a Activity[In, Out]) declaration() Declaration { return Declaration{Name: a.name, By: a.by} }

// Execute schedules the activity with in, under ctx's activity options.
func (a Activity[In, Out]) Execute(ctx workflow.Context, in In) Future[Out] {
	return Future[Out]{workflow.ExecuteActivity(ctx, a.name, in)}
}

// ExecuteLocal runs the activity with in as a local activity, under ctx's local activity
// options.
func (a Activity[In, Out]) ExecuteLocal(ctx workflow.Context, in In) Future[Out] {
	return Future[Out]{workflow.ExecuteLocalActivity(ctx, a.name, in)}
}

// Future is an activity's result to come. Its Future is what a selector takes.
type Future[Out any] struct{ workflow.Future }

// Get waits for the activity and puts its result in out (nil: only its error matters).
func (f Future[Out]) Get(ctx workflow.Context, out *Out) error {
	if out == nil {
		return f.Future.Get(ctx, nil)
	}
	return f.Future.Get(ctx, out)
}

// Registry is where activities are registered: a worker, or a test's environment.
type Registry interface {
	RegisterActivityWithOptions(fn any, options activity.RegisterOptions)
}

// Register registers fn, the method that implements a, as a.
func Register[In, Out any](r Registry, a Activity[In, Out],
	fn func(context.Context, In) (Out, error)) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: a.name})
}

// RegisterNoResult registers fn, the method that implements a, which returns only an
// error, as a.
func RegisterNoResult[In any](r Registry, a Activity[In, None],
	fn func(context.Context, In) error) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: a.name})
}
