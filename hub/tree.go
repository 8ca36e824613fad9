package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	temco "github.com/temco/temco/client"
)

// node is one temco resource an object declares, with the resources under it.
type node struct {
	// uses is the configuration of what the resource uses that other objects declare (a
	// DIG: its composite app's applied hash): part of the hash, never sent.
	uses string
	coll string // the collection's path, e.g. /projects/p/composite-apps
	name string
	// item is the resource's path when it is not coll/name (composite apps: /{name}/{version}).
	item string
	body map[string]any // {"metadata": ..., "spec": ...}
	file []byte         // multipart: the "file" part
	// multipart: the kind takes multipart bodies (the file then always sent, since the API
	// shows no digest of a stored file to compare with).
	multipart bool
	children  []*node
	// manages: collections under this resource whose items the object owns wholly: an
	// item there that the object no longer declares is deleted.
	manages []string
}

func (n *node) path() string {
	if n.item != "" {
		return n.item
	}
	return n.coll + "/" + esc(n.name) // escaped: a '/' in a name is refused, not a path
}

// stored is what the API answers for a resource.
type stored struct {
	Metadata map[string]any `json:"metadata"`
	Spec     any            `json:"spec"`
	Owner    string         `json:"owner"`
	Label    string         `json:"clusterLabel"` // a cluster label's body, which has no metadata
}

// name is the resource's name: a cluster label's is its label.
func (s stored) name() string {
	if n, _ := s.Metadata["name"].(string); n != "" {
		return n
	}
	return s.Label
}

// files is what the node sends as multipart's file part (none when it takes JSON).
func (n *node) files() []temco.File {
	if !n.multipart {
		return nil
	}
	return []temco.File{{Data: n.file}}
}

// tree writes a node tree through the REST API on behalf of one owner.
type tree struct {
	api   *temco.Client // its writes owned by owner
	owner string
	wrote int // resources created or replaced: the caller's "changed"
}

// tree is a tree that writes as owner.
func (r *Reconciler) tree(owner string) *tree {
	return &tree{api: r.API.OwnedBy(owner), owner: owner}
}

// apply creates or replaces n and then its children, parents first, once every path in
// the tree is a path of names (nothing is written for a tree that holds a bad one). A
// resource that exists with another owner (REST's, or another object's) is a Refusal:
// the hub never takes over what it did not create.
func (t *tree) apply(ctx context.Context, n *node) error {
	if err := checkTree(n); err != nil {
		return err
	}
	return t.write(ctx, n)
}

func checkTree(n *node) error {
	if err := checkPath(n.path()); err != nil {
		return err
	}
	for _, c := range n.children {
		if err := checkTree(c); err != nil {
			return err
		}
	}
	return nil
}

func (t *tree) write(ctx context.Context, n *node) error {
	api := as(ctx, t.api)
	var cur stored
	found, err := api.Get(ctx, n.path(), &cur)
	if err != nil {
		return err
	}
	switch {
	case !found:
		if err := api.Create(ctx, n.coll, n.body, n.files()...); err != nil {
			return err
		}
		t.wrote++
	case cur.Owner != t.owner:
		who := "a REST client"
		if cur.Owner != "" {
			who = cur.Owner
		}
		return &Refusal{Code: http.StatusConflict, Message: fmt.Sprintf("%s exists already, owned by %s: the hub does not take it over (delete it there, or rename this object)", n.path(), who)}
	case n.multipart || !same(n.body, cur):
		if err := api.Replace(ctx, n.path(), n.body, n.files()...); err != nil {
			return err
		}
		t.wrote++
	}
	for _, c := range n.children {
		if err := t.write(ctx, c); err != nil {
			return err
		}
	}
	return t.prune(ctx, n)
}

// prune deletes what n's managed collections hold beyond its children (the object's
// own, owner-checked by the API).
func (t *tree) prune(ctx context.Context, n *node) error {
	for _, coll := range n.manages {
		var items []stored
		if _, err := as(ctx, t.api).Get(ctx, n.path()+"/"+coll, &items); err != nil {
			return err
		}
		for _, it := range items {
			name := it.name()
			if it.Owner != t.owner || slices.ContainsFunc(n.children, func(c *node) bool { return c.coll == n.path()+"/"+coll && c.name == name }) {
				continue
			}
			if err := t.remove(ctx, n.path()+"/"+coll+"/"+esc(name), nil); err != nil {
				return err
			}
			t.wrote++
		}
	}
	return nil
}

// remove deletes the resource at path after the children nodes under it, children
// first; one that is gone already is fine, and so is one at a path apply refuses (the
// hub wrote nothing there, and must not send a request there).
func (t *tree) remove(ctx context.Context, path string, children []*node) error {
	if checkPath(path) != nil {
		return nil
	}
	for i := len(children) - 1; i >= 0; i-- {
		c := children[i]
		if err := t.remove(ctx, c.path(), c.children); err != nil {
			return err
		}
	}
	if err := as(ctx, t.api).Delete(ctx, path); !temco.IsNotFound(err) {
		return err
	}
	return nil
}

// segment is what each step of a path the hub writes to must be: a name (EMCO's names
// are letters, digits, '-', '_' and '.', from a letter or digit): never "..", an escaped
// '/', or empty. The hub calls the API as an admin on behalf of tenants' objects, so a
// name must not lead it out of the object's project.
var segment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func checkPath(p string) error {
	for _, s := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if !segment.MatchString(s) {
			return &Refusal{Code: http.StatusBadRequest, Message: fmt.Sprintf("%q in %s is not a name temco takes (letters, digits, '-', '_' and '.')", s, p)}
		}
	}
	return nil
}

// same reports whether the stored resource says what body says, zero values and absent
// fields alike. Only objects whose configuration changed are compared (Reconcile), so a
// default the API fills in costs at most one needless replace then.
func same(body map[string]any, cur stored) bool {
	var b, c map[string]any
	if !roundTrip(body, &b) || !roundTrip(map[string]any{"metadata": cur.Metadata, "spec": cur.Spec, "clusterLabel": cur.Label}, &c) {
		return false
	}
	return subset(b, c) && subset(c, b)
}

func roundTrip(in any, out any) bool {
	raw, err := json.Marshal(in)
	return err == nil && json.Unmarshal(raw, out) == nil
}

// subset: want's every value is in got (maps by key, lists element by element with the
// same length); a zero value in want matches an absent one in got.
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		for k, v := range w {
			if !subset(v, g[k]) {
				return false
			}
		}
		return true
	case []any:
		g, _ := got.([]any)
		if len(w) != len(g) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	}
	if got == nil {
		return reflect.ValueOf(want).IsZero()
	}
	return reflect.DeepEqual(want, got)
}
