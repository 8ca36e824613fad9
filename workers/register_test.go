package workers

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/activities/logicalcloud"
	"github.com/temco/temco/features/registry"
	"github.com/temco/temco/internal/core/lifecycle"
)

// An activity's code is found from its call in one hop: lifecycle.X's declaration names
// the package and struct that implement it (its Implementer), and the method is X. The
// compiler holds the method to the activity's types (lifecycle.Register); this holds the
// worker to register exactly the activities declared, each by that method.
func TestEveryActivityDeclaredIsRegisteredByItsMethod(t *testing.T) {
	r := record(t)
	for _, p := range activityProblems(r.activities, lifecycle.Declarations()) {
		t.Error(p)
	}
}

// The check finds an activity registered by another method, another struct's method or a
// function, one registered twice or never, and one no declaration has.
func TestAWrongActivityRegistrationIsFound(t *testing.T) {
	on := &cluster.Activities{}
	decl := map[string]lifecycle.Declaration{}
	for _, a := range []string{"ApplyCluster", "DeleteCluster", "ReadCluster", "PruneCluster", "ListBatch"} {
		decl[a] = lifecycle.Declaration{Name: a, By: lifecycle.ApplyCluster.By()}
	}
	decl["PrepareLogicalCloud"] = lifecycle.Declarations()["PrepareLogicalCloud"]
	r := newRecorder()
	lifecycle.Register(r, lifecycle.ApplyCluster, on.ApplyCluster)
	lifecycle.Register(r, lifecycle.DeleteCluster, on.ApplyCluster)      // another method
	lifecycle.Register(r, lifecycle.ReadCluster, impostor{}.ReadCluster) // another struct
	lifecycle.Register(r, lifecycle.ReadCluster, on.ReadCluster)         // twice
	lifecycle.Register(r, lifecycle.PrepareLogicalCloud, (&logicalcloud.Activities{}).PrepareLogicalCloud)
	list := func(context.Context, lifecycle.BatchInput) ([]string, error) { return nil, nil }
	lifecycle.Register(r, lifecycle.ListBatch, list) // a function
	r.RegisterActivityWithOptions(on.ContextBatches, activity.RegisterOptions{Name: "ContextBatches"})
	got := activityProblems(r.activities, decl)
	want := []string{
		`activity ContextBatches is registered but not declared in lifecycle`,
		`activity DeleteCluster is registered by` +
			` github.com/temco/temco/activities/cluster.(*Activities).ApplyCluster-fm,` +
			` not by activities/cluster's Activities' method DeleteCluster`,
		`activity ListBatch is registered by` +
			` github.com/temco/temco/workers.TestAWrongActivityRegistrationIsFound.func1,` +
			` not by activities/cluster's Activities' method ListBatch`,
		`activity ReadCluster is registered 2 times`,
		`activity ReadCluster is registered by` +
			` github.com/temco/temco/workers.impostor.ReadCluster-fm,` +
			` not by activities/cluster's Activities' method ReadCluster`,
		`activity PruneCluster is declared but not registered`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// impostor has a method of an activity's name and types, on the wrong struct.
type impostor struct{}

func (impostor) ReadCluster(context.Context, lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	return lifecycle.ClusterResult{}, nil
}

// activityProblems says where the activities registered (by name, each registration's
// function) differ from those declared: each registered once, by the method of its name
// on the struct its declaration names.
func activityProblems(registered map[string][]any, declared map[string]lifecycle.Declaration) []string {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		fns := registered[name]
		d, ok := declared[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("activity %s is registered but not declared in lifecycle", name))
			continue
		}
		if len(fns) != 1 {
			problems = append(problems, fmt.Sprintf("activity %s is registered %d times", name, len(fns)))
		}
		for _, fn := range fns {
			if got := funcName(fn); !isMethod(got, d.By, name) {
				problems = append(problems, fmt.Sprintf("activity %s is registered by %s, not by %s's %s' method %s",
					name, got, d.By.Package, d.By.Struct, name))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		if _, ok := registered[name]; !ok {
			problems = append(problems, fmt.Sprintf("activity %s is declared but not registered", name))
		}
	}
	return problems
}

// funcName is the name the runtime gives fn's code: for a method value,
// "github.com/temco/temco/features/drift/work.(*Activities).PlanDriftCheck-fm".
func funcName(fn any) string {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func {
		return fmt.Sprintf("a %T, not a function", fn)
	}
	return runtime.FuncForPC(v.Pointer()).Name()
}

// isMethod says whether name (funcName's) is that of a method value of by's struct, on
// it or on a pointer to it, named method.
func isMethod(name string, by lifecycle.Implementer, method string) bool {
	pkg := "github.com/temco/temco/" + by.Package + "."
	return name == pkg+"(*"+by.Struct+")."+method+"-fm" || name == pkg+by.Struct+"."+method+"-fm"
}

// The workflows start their children by lifecycle's child Workflows (ExecuteChild): each
// must be registered, by the function of its name.
func TestEveryChildWorkflowIsRegisteredByItsFunction(t *testing.T) {
	if len(lifecycle.ChildWorkflows()) == 0 {
		t.Fatal("no child workflows declared")
	}
	for _, p := range workflowProblems(record(t).workflows, lifecycle.ChildWorkflows()) {
		t.Error(p)
	}
}

// The check finds a child workflow not registered, and one registered by a function of
// another name.
func TestAnUnregisteredChildWorkflowIsFound(t *testing.T) {
	r := record(t)
	delete(r.workflows, lifecycle.WorkflowApplyBatch)
	r.workflows[lifecycle.WorkflowDeleteBatch] = []any{Workflows[lifecycle.WorkflowPruneBatch]}
	got := workflowProblems(r.workflows, lifecycle.ChildWorkflows())
	want := []string{
		`child workflow ApplyBatch is not registered`,
		`child workflow DeleteBatch is registered by github.com/temco/temco/workflows/deploy.PruneBatch,` +
			` not by a function of its name`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// workflowProblems says which of children the workflows registered (by name, each
// registration's function) lack, or register more than once or by a function of
// another name.
func workflowProblems(registered map[string][]any, children []string) []string {
	var problems []string
	for _, name := range children {
		fns := registered[name]
		if len(fns) == 0 {
			problems = append(problems, fmt.Sprintf("child workflow %s is not registered", name))
			continue
		}
		if len(fns) > 1 {
			problems = append(problems, fmt.Sprintf("child workflow %s is registered %d times", name, len(fns)))
		}
		for _, fn := range fns {
			if got := funcName(fn); !strings.HasSuffix(got, "."+name) {
				problems = append(problems, fmt.Sprintf("child workflow %s is registered by %s, not by a function of its name",
					name, got))
			}
		}
	}
	return problems
}

// recorder is a worker.Registry that keeps what is registered, by name; what the workers
// never call panics.
type recorder struct {
	worker.Registry
	activities, workflows map[string][]any
}

func newRecorder() *recorder {
	return &recorder{activities: map[string][]any{}, workflows: map[string][]any{}}
}

func (r *recorder) RegisterWorkflowWithOptions(fn any, o workflow.RegisterOptions) {
	r.workflows[o.Name] = append(r.workflows[o.Name], fn)
}

func (r *recorder) RegisterActivityWithOptions(fn any, o activity.RegisterOptions) {
	r.activities[o.Name] = append(r.activities[o.Name], fn)
}

// record is what Register registers.
func record(t *testing.T) *recorder {
	t.Helper()
	r := newRecorder()
	Register(r, Deps{}, registry.All)
	if len(r.activities) == 0 || len(r.workflows) == 0 {
		t.Fatalf("Register registered %d activities and %d workflows", len(r.activities), len(r.workflows))
	}
	return r
}

// The domains that use the cluster layer share the worker's one (it pools connections and
// caches contexts), whichever builds it first.
func TestTheDomainsShareOneClusterLayer(t *testing.T) {
	d := &deps.Deps{}
	users := []*cluster.Activities{logicalcloud.New(d).Cluster, newCACerts(d).Cluster.(*cluster.Activities)}
	on := cluster.Shared(d)
	for _, u := range users {
		if u != on {
			t.Errorf("a domain uses cluster.Activities %p, the worker registers %p", u, on)
		}
	}
}

// Intents may not start temco's own workflow types (workflowmgr): the list they are
// refused by is every type the worker registers.
func TestOwnWorkflowTypesAreTheRegisteredOnes(t *testing.T) {
	got := slices.Sorted(maps.Keys(AllWorkflows()))
	want := lifecycle.OwnWorkflowTypes()
	if !slices.Equal(got, want) {
		t.Errorf("lifecycle.OwnWorkflowTypes %v, workers.Workflows %v", want, got)
	}
}
