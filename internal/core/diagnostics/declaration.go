// Package diagnostics lists every declared temco resource — created over REST or
// reconciled by temco hub — with where it was declared, whether temco accepted it and what
// temco knows is wrong with it. The hub reports each of its objects' outcome as a
// Declaration: a refused object has no resource in the store to show, so its report is the
// only trace of it. Entries (entry.go) merge the store's resources with those reports.
package diagnostics

import (
	"fmt"
	"strings"
	"time"
)

// Limits of a declaration's fields, in bytes: a report is bounded whatever the hub sends.
const (
	// MaxObjectLen: "hub:" + the object is an owner (api: X-Temco-Owner, 256 at most).
	MaxObjectLen    = 252
	MaxKindLen      = 63
	MaxNamespaceLen = 63  // a Kubernetes namespace (a DNS label)
	MaxNameLen      = 253 // a Kubernetes object's name (a DNS subdomain)
	MaxProjectLen   = 253
	MaxPathLen      = 1024
	MaxMessageLen   = 4096
)

// OwnerPrefix begins the owner temco hub writes as: "hub:" + a declaration's object.
const OwnerPrefix = "hub:"

// Declaration is what temco hub reports about one of its objects: the temco resource it
// declares (Path; empty when the hub could not tell) and whether the API accepted it
// (Message: the API's refusal).
type Declaration struct {
	// Object is Kind/namespace/name, or Kind/name for a cluster-scoped kind: the hub's
	// owner name without "hub:". It keys the report.
	Object     string    `json:"object" bson:"_id"`
	Kind       string    `json:"kind" bson:"kind"`
	Namespace  string    `json:"namespace,omitempty" bson:"namespace,omitempty"`
	Name       string    `json:"name" bson:"name"`
	Generation int64     `json:"generation" bson:"generation"`
	Project    string    `json:"project,omitempty" bson:"project,omitempty"`
	Path       string    `json:"path,omitempty" bson:"path,omitempty"` // /v2/...
	Accepted   bool      `json:"accepted" bson:"accepted"`
	Message    string    `json:"message,omitempty" bson:"message,omitempty"`
	Time       time.Time `json:"time" bson:"time"` // when the hub decided (its Accepted condition's transition)
}

// Owner is the X-Temco-Owner the declared object's reports come with.
func (d *Declaration) Owner() string { return OwnerPrefix + d.Object }

// Validate checks every field's shape and bound; the error names the field.
func (d *Declaration) Validate() error {
	if err := ValidObject(d.Object); err != nil {
		return err
	}
	for _, f := range []struct {
		what, value string
		max         int
		required    bool
	}{
		{"kind", d.Kind, MaxKindLen, true},
		{"namespace", d.Namespace, MaxNamespaceLen, false},
		{"name", d.Name, MaxNameLen, true},
	} {
		if err := token(f.what, f.value, f.max, f.required); err != nil {
			return err
		}
		if strings.Contains(f.value, "/") {
			return fmt.Errorf("%s %q has a '/': it is one segment of the object", f.what, f.value)
		}
	}
	if want := ObjectOf(d.Kind, d.Namespace, d.Name); d.Object != want {
		return fmt.Errorf("object %q is not its kind, namespace and name: want %q", d.Object, want)
	}
	if d.Generation < 0 {
		return fmt.Errorf("generation %d is negative", d.Generation)
	}
	if len(d.Project) > MaxProjectLen {
		return fmt.Errorf("project is %d bytes long: %d at most", len(d.Project), MaxProjectLen)
	}
	if strings.ContainsFunc(d.Project, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("project %q holds a control character", d.Project)
	}
	if d.Path != "" {
		if err := token("path", d.Path, MaxPathLen, true); err != nil {
			return err
		}
		if !strings.HasPrefix(d.Path, "/v2/") {
			return fmt.Errorf("path %.64q is not a path of the REST API: it begins with /v2/ (or leave it out)", d.Path)
		}
	}
	if len(d.Message) > MaxMessageLen {
		return fmt.Errorf("message is %d bytes long: %d at most (shorten it)", len(d.Message), MaxMessageLen)
	}
	return nil
}

// ObjectOf names a hub object: Kind/namespace/name, or Kind/name without a namespace.
func ObjectOf(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// ValidObject checks an object's name as an owner's (printable ASCII, no spaces), bounded
// so that "hub:" + it is one.
func ValidObject(o string) error {
	return token("object", o, MaxObjectLen, true)
}

// token checks a required (or empty) field of at most max printable ASCII characters
// without spaces.
func token(what, v string, max int, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("%s is required", what)
	case len(v) > max:
		return fmt.Errorf("%s is %d bytes long: %d at most", what, len(v), max)
	}
	for i := range len(v) {
		if v[i] < '!' || v[i] > '~' {
			return fmt.Errorf("%s %.64q: character %d is not printable ASCII (spaces are not allowed either)", what, v, i+1)
		}
	}
	return nil
}
