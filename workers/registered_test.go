package workers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Workflows name their activities and child workflows by string, so a name no worker
// registers compiles, passes the testsuite (which registers fakes) and fails only on a
// real worker. Every name the workflows use must be one Register registers.
func TestEveryActivityAndChildWorkflowTheWorkflowsCallIsRegistered(t *testing.T) {
	fset := token.NewFileSet()
	for _, problem := range unregistered(fset, parseDir(t, fset, "../workflows"), lifecycleConstants(t), registered(t)) {
		t.Error(problem)
	}
}

// The check itself finds a call of an activity no worker registers, and names used as
// the wrong kind.
func TestAnUnregisteredNameIsFound(t *testing.T) {
	src := `package deploy
func wf(ctx workflow.Context) {
	workflow.ExecuteActivity(ctx, lifecycle.ActivityApplyCluster, nil)
	workflow.ExecuteActivity(ctx, "ApplyEverything", nil)
	workflow.ExecuteChildWorkflow(ctx, lifecycle.ActivityApplyCluster, nil)
	localfirst.Execute(ctx, 0, nil, lifecycle.WorkflowApplyBatch, nil, nil)
	_ = lifecycle.ActivityNotThere
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "wf.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{"ActivityApplyCluster": "ApplyCluster", "WorkflowApplyBatch": "ApplyBatch",
		"ActivityNotThere": "NotThere"}
	reg := registrations{activities: map[string]bool{"ApplyCluster": true}, workflows: map[string]bool{"ApplyBatch": true}}
	got := unregistered(fset, []*ast.File{f}, consts, reg)
	want := []string{
		`wf.go:4: activity "ApplyEverything" is not registered`,
		`wf.go:5: workflow "ApplyCluster" (lifecycle.ActivityApplyCluster) is not registered`,
		`wf.go:6: activity "ApplyBatch" (lifecycle.WorkflowApplyBatch) is not registered`,
		`wf.go:7: activity "NotThere" (lifecycle.ActivityNotThere) is not registered`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// registrations are the activity and workflow type names a worker registers.
type registrations struct{ activities, workflows map[string]bool }

// recorder is a worker.Registry that notes names; what the workers never call panics.
type recorder struct {
	worker.Registry
	registrations
	pkg string // the package of the structs last registered, e.g. "activities/cluster"
}

func (r *recorder) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows[o.Name] = true
}

func (r *recorder) RegisterActivity(a any) {
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{})
}

// RegisterActivityWithOptions names a function by its option and a struct's methods as
// the SDK does: each exported method, prefixed by the option.
func (r *recorder) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	v := reflect.ValueOf(a)
	r.pkg = strings.TrimPrefix(reflect.Indirect(v).Type().PkgPath(), "github.com/temco/temco/")
	if v.Kind() == reflect.Func {
		r.activities[o.Name] = true
		return
	}
	for i := range v.NumMethod() {
		r.activities[o.Name+v.Type().Method(i).Name] = true
	}
}

func registered(t *testing.T) registrations {
	t.Helper()
	r := &recorder{registrations: registrations{activities: map[string]bool{}, workflows: map[string]bool{}}}
	Register(r, Deps{})
	if len(r.activities) == 0 || len(r.workflows) == 0 {
		t.Fatalf("Register registered %d activities and %d workflows", len(r.activities), len(r.workflows))
	}
	return r.registrations
}

// callee says which argument of a call names what: workflow.ExecuteActivity(ctx, name, ...).
var callee = map[string]struct {
	arg      int
	workflow bool
}{
	"workflow.ExecuteActivity":      {1, false},
	"workflow.ExecuteLocalActivity": {1, false},
	"workflow.ExecuteChildWorkflow": {1, true},
	"localfirst.Execute":            {3, false},
}

// unregistered lists the names files use that reg lacks: each name argument of a call in
// callee that is a literal or a lifecycle constant, and every lifecycle.ActivityX and
// WorkflowX anywhere (names passed on in variables, like a batch's activity, come from
// those).
func unregistered(fset *token.FileSet, files []*ast.File, consts map[string]string, reg registrations) []string {
	var problems []string
	check := func(n ast.Node, value, constant string, isWorkflow bool) {
		kind, names := "activity", reg.activities
		if isWorkflow {
			kind, names = "workflow", reg.workflows
		}
		if names[value] {
			return
		}
		p := fset.Position(n.Pos())
		what := kind + " " + strconv.Quote(value)
		if constant != "" {
			what += " (" + constant + ")"
		}
		problems = append(problems, fmt.Sprintf("%s:%d: %s is not registered", p.Filename, p.Line, what))
	}
	for _, f := range files {
		named := map[ast.Node]bool{} // call arguments, checked as the call's kind
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				c, ok := callee[qualified(n.Fun)]
				if !ok || len(n.Args) <= c.arg {
					return true
				}
				switch a := n.Args[c.arg].(type) {
				case *ast.BasicLit:
					if s, err := strconv.Unquote(a.Value); err == nil {
						check(a, s, "", c.workflow)
					}
				case *ast.SelectorExpr:
					if v, ok := consts[a.Sel.Name]; ok && qualified(a) == "lifecycle."+a.Sel.Name {
						check(a, v, qualified(a), c.workflow)
						named[a] = true
					}
				}
			case *ast.SelectorExpr:
				name := n.Sel.Name
				v, ok := consts[name]
				if !ok || named[n] || qualified(n) != "lifecycle."+name {
					return true
				}
				if strings.HasPrefix(name, "Activity") || strings.HasPrefix(name, "Workflow") {
					check(n, v, qualified(n), strings.HasPrefix(name, "Workflow"))
				}
			}
			return true
		})
	}
	return problems
}

// qualified is "pkg.Name" for a selector on an identifier, else "".
func qualified(e ast.Expr) string {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := s.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return x.Name + "." + s.Sel.Name
}

// parseDir parses the Go files under dir, tests left out.
func parseDir(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	var files []*ast.File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		files = append(files, f)
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("parse %s: %d files, %v", dir, len(files), err)
	}
	return files
}

// lifecycleConstants are the string constants of internal/core/lifecycle, by name.
func lifecycleConstants(t *testing.T) map[string]string {
	t.Helper()
	consts := map[string]string{}
	for _, f := range parseDir(t, token.NewFileSet(), "../internal/core/lifecycle") {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return consts
}

// Intents may not start temco's own workflow types (workflowmgr): the list they are
// refused by is every type the worker registers.
func TestOwnWorkflowTypesAreTheRegisteredOnes(t *testing.T) {
	got := slices.Sorted(maps.Keys(Workflows))
	want := slices.Sorted(slices.Values(lifecycle.OwnWorkflowTypes))
	if !slices.Equal(got, want) {
		t.Errorf("lifecycle.OwnWorkflowTypes %v, workers.Workflows %v", want, got)
	}
}
