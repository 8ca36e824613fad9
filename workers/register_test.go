package workers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/activities/logicalcloud"
	"github.com/temco/temco/controllers/cacerts"
)

// An activity's code is found from its call in one hop: the lifecycle constant's heading
// names the package of the struct that implements it, whose ActivityNames lists exactly
// what is registered of it, and the method has the constant's value. This holds every
// part of that path.
func TestEachActivityIsRegisteredByTheDomainItsConstantNames(t *testing.T) {
	consts := lifecycleConstants(t)
	headings := activityHeadings(t)
	owner := map[string]string{} // activity name: the package whose list has it
	for _, dom := range domains {
		r := &recorder{registrations: registrations{activities: map[string]bool{}, workflows: map[string]bool{}}}
		dom.register(r, &deps.Deps{})
		pkg := r.pkg // the package of the structs it registers
		listed := map[string]bool{}
		for _, name := range dom.names {
			if listed[name] {
				t.Errorf("%s lists %s twice", pkg, name)
			}
			listed[name] = true
			if other, ok := owner[name]; ok {
				t.Errorf("%s and %s both list %s", other, pkg, name)
			}
			owner[name] = pkg
			if !r.activities[name] {
				t.Errorf("%s lists %s but registers no such activity (no method of that name)", pkg, name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(r.activities)) {
			if !listed[name] {
				t.Errorf("%s registers %s but does not list it in ActivityNames", pkg, name)
			}
		}
	}
	values := map[string]bool{}
	for constant, value := range consts {
		if !strings.HasPrefix(constant, "Activity") {
			continue
		}
		values[value] = true
		pkg, ok := owner[value]
		switch {
		case !ok:
			t.Errorf("lifecycle.%s (%q): no domain lists it", constant, value)
		case !strings.HasPrefix(headings[constant], pkg+" ("):
			first, _, _ := strings.Cut(headings[constant], "\n")
			t.Errorf("lifecycle.%s: its block's heading should begin %q (the package that registers it), is %q",
				constant, pkg+" (", first)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(owner)) {
		if !values[name] {
			t.Errorf("%s lists %q, which is no lifecycle.Activity constant: workflows could only call it by a literal",
				owner[name], name)
		}
	}
}

// activityHeadings maps each Activity constant of internal/core/lifecycle to the comment
// heading its group in a const block: the last doc comment above it in the block.
func activityHeadings(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../internal/core/lifecycle/*.go")
	if err != nil || len(paths) == 0 {
		t.Fatalf("internal/core/lifecycle: %d files, %v", len(paths), err)
	}
	headings := map[string]string{}
	for _, path := range paths {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			heading := g.Doc
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if vs.Doc != nil {
					heading = vs.Doc
				}
				for _, name := range vs.Names {
					if strings.HasPrefix(name.Name, "Activity") && heading != nil {
						headings[name.Name] = heading.Text()
					}
				}
			}
		}
	}
	return headings
}

// The domains that use the cluster layer share the worker's one (it pools connections and
// caches contexts), whichever registers first.
func TestTheDomainsShareOneClusterLayer(t *testing.T) {
	r := &structs{}
	Register(r, Deps{})
	var on *cluster.Activities
	var users []*cluster.Activities
	for _, a := range r.all {
		switch a := a.(type) {
		case *cluster.Activities:
			on = a
		case *logicalcloud.Activities:
			users = append(users, a.Cluster)
		case *cacerts.Activities:
			users = append(users, a.Cluster.(*cluster.Activities))
		}
	}
	if on == nil || len(users) != 2 {
		t.Fatalf("registered cluster.Activities %v, %d users of it", on, len(users))
	}
	for _, u := range users {
		if u != on {
			t.Errorf("a domain uses cluster.Activities %p, the worker registers %p", u, on)
		}
	}
}

// structs is a worker.Registry that keeps what is registered.
type structs struct {
	worker.Registry // what Register never calls panics
	all             []any
}

func (r *structs) RegisterWorkflowWithOptions(any, workflow.RegisterOptions) {}
func (r *structs) RegisterActivity(a any)                                    { r.all = append(r.all, a) }
