// Package ctxedit applies controllers' edits to an AppContext: each controller step's
// edits are a layer over what rendering and generic placement produced, so a view at any
// step, and the final commit, are computed from the same stored base.
package ctxedit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/model"
)

// State is a context as the controllers have left it so far.
type State struct {
	Order  []string // apps in apply order
	Apps   map[string]*App
	labels func(app string) map[string]string
}

// App is one app's placement and objects.
type App struct {
	Name string
	// Groups: each ends on its first remaining cluster by name (allOf clusters are groups
	// of one).
	Groups  [][]string
	Objects []appctx.Object
	// PerCluster holds the objects of clusters that cluster-specific edits made differ.
	PerCluster map[string][]appctx.Object
	Edited     bool // Objects or PerCluster differ from the rendering
	Added      bool // a controller added the app (EditAddApp)
}

// New starts from the rendered apps (their Base when an earlier commit attempt replaced
// their objects) and the placement groups; labels gives what every object of an app
// carries (added resources get it too).
func New(order []string, rendered map[string]*appctx.App, groups map[string][][]string, labels func(string) map[string]string) (*State, error) {
	s := &State{Apps: make(map[string]*App, len(order)), labels: labels}
	for _, name := range order {
		r := rendered[name]
		if r == nil {
			return nil, fmt.Errorf("app %q is not rendered", name)
		}
		if r.Added { // stored by an earlier commit attempt: the edits add it again
			continue
		}
		s.Order = append(s.Order, name)
		objs := r.Objects
		if r.Base != nil {
			objs = r.Base
		}
		s.Apps[name] = &App{Name: name, Groups: groups[name], Objects: slices.Clone(objs)}
	}
	return s, nil
}

// Clusters resolves the app's groups.
func (a *App) Clusters() []string { return Resolve(a.Groups) }

// Resolve picks each group's first cluster by name and returns the sorted set.
func Resolve(groups [][]string) []string {
	set := map[string]bool{}
	for _, g := range groups {
		if len(g) > 0 {
			set[slices.Min(g)] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// ObjectsOn returns the app's objects on cluster ("" for what every cluster gets).
func (a *App) ObjectsOn(cluster string) []appctx.Object {
	if objs, ok := a.PerCluster[cluster]; ok {
		return objs
	}
	return a.Objects
}

// Error is an edit a controller must not make: the controller's mistake, not retried.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &Error{msg: fmt.Sprintf(format, args...)} }

// Apply applies one controller's edits; typ (placement or action) limits which it may make.
func (s *State) Apply(controller, typ string, edits []contract.Edit) error {
	for i, e := range edits {
		if err := s.apply(typ, e); err != nil {
			return errorf("controller %s, edit %d (%s of app %q): %v", controller, i, e.Op, e.App, err)
		}
	}
	return nil
}

func (s *State) apply(typ string, e contract.Edit) error {
	if e.Op == contract.EditAddApp {
		if typ != contract.TypeAction {
			return fmt.Errorf("placement controllers may only remove or add clusters")
		}
		return s.addApp(e)
	}
	a := s.Apps[e.App]
	if a == nil {
		return fmt.Errorf("the context has no app %q", e.App)
	}
	placement := e.Op == contract.EditRemoveClusters || e.Op == contract.EditAddClusters
	switch {
	case placement && typ != contract.TypePlacement:
		return fmt.Errorf("only placement controllers change where apps go")
	case !placement && typ != contract.TypeAction:
		return fmt.Errorf("placement controllers may only remove or add clusters")
	}
	switch e.Op {
	case contract.EditRemoveClusters:
		drop := map[string]bool{}
		for _, c := range e.Clusters {
			drop[c] = true
		}
		for i, g := range a.Groups {
			a.Groups[i] = slices.DeleteFunc(slices.Clone(g), func(c string) bool { return drop[c] })
		}
		return nil
	case contract.EditAddClusters:
		have := map[string]bool{}
		for _, c := range a.Clusters() {
			have[c] = true
		}
		for _, c := range e.Clusters {
			if p, n, ok := strings.Cut(c, "+"); !ok || p == "" || n == "" {
				return fmt.Errorf("cluster %q is not provider+cluster", c)
			}
			if !have[c] {
				a.Groups, have[c] = append(a.Groups, []string{c}), true
			}
		}
		return nil
	case contract.EditAddResource:
		return s.each(a, e.Clusters, func(objs []appctx.Object) ([]appctx.Object, error) {
			return s.add(a.Name, objs, e.Data)
		})
	case contract.EditPatch:
		return s.each(a, e.Clusters, func(objs []appctx.Object) ([]appctx.Object, error) {
			return patchIn(objs, e)
		})
	}
	return fmt.Errorf("unknown edit %q", e.Op)
}

// addApp adds an app of a controller's own, with no objects, after the others.
func (s *State) addApp(e contract.Edit) error {
	if s.Apps[e.App] != nil {
		return fmt.Errorf("the context already has app %q", e.App)
	}
	if err := model.ValidateName("the app name", e.App); err != nil {
		return err
	}
	if len(e.Clusters) == 0 {
		return fmt.Errorf("an added app needs clusters")
	}
	a := &App{Name: e.App, Edited: true, Added: true}
	for _, c := range slices.Sorted(slices.Values(e.Clusters)) {
		if p, n, ok := strings.Cut(c, "+"); !ok || p == "" || n == "" {
			return fmt.Errorf("cluster %q is not provider+cluster", c)
		}
		if len(a.Groups) == 0 || a.Groups[len(a.Groups)-1][0] != c {
			a.Groups = append(a.Groups, []string{c})
		}
	}
	s.Apps[e.App], s.Order = a, append(s.Order, e.App)
	return nil
}

// each applies f to what every cluster gets (clusters empty) or to the named clusters' own
// copies.
func (s *State) each(a *App, clusters []string, f func([]appctx.Object) ([]appctx.Object, error)) error {
	a.Edited = true
	if len(clusters) == 0 {
		objs, err := f(slices.Clone(a.Objects))
		if err != nil {
			return err
		}
		a.Objects = objs
		for c, own := range a.PerCluster {
			if a.PerCluster[c], err = f(slices.Clone(own)); err != nil {
				return err
			}
		}
		return nil
	}
	placed := a.Clusters()
	for _, c := range clusters {
		if _, ok := slices.BinarySearch(placed, c); !ok {
			return fmt.Errorf("cluster %q is not one of the app's clusters %v", c, placed)
		}
		objs, err := f(slices.Clone(a.ObjectsOn(c)))
		if err != nil {
			return err
		}
		if a.PerCluster == nil {
			a.PerCluster = map[string][]appctx.Object{}
		}
		a.PerCluster[c] = objs
	}
	return nil
}

// add adds a manifest (JSON or YAML), replacing an object of the same kind and name.
func (s *State) add(app string, objs []appctx.Object, data []byte) ([]appctx.Object, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("the manifest is not JSON or YAML: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("the manifest is not a Kubernetes object: %v", err)
	}
	if u.GetName() == "" {
		return nil, fmt.Errorf("the manifest has no metadata.name")
	}
	if l := s.labels(app); len(l) > 0 {
		all := u.GetLabels()
		if all == nil {
			all = map[string]string{}
		}
		maps.Copy(all, l)
		u.SetLabels(all)
	}
	o, err := appctx.NewObject(u)
	if err != nil {
		return nil, err
	}
	for i := range objs {
		if objs[i].Kind == o.Kind && objs[i].Name == o.Name && objs[i].Namespace == o.Namespace {
			objs[i] = o
			return objs, nil
		}
	}
	return append(objs, o), nil
}
