package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/adapters/kubeconfig"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Controller is what the API needs of a built-in intent controller: its REST resources
// under the DIG, and which registrations in /v2/controllers it serves.
type Controller struct {
	Name string
	// Means reports whether a registration (its name and spec.host) means this controller.
	Means func(name, host string) bool
	Kinds []ResourceKind
}

// ResourceKind is a kind of REST resource an intent controller adds under the DIG; the API
// serves it with the generic handlers (create, list, get, replace, delete, OpenAPI).
type ResourceKind interface {
	mount(g *echo.Group, s *Server)
}

// KindDef describes a controller's or a feature's resource kind {metadata, spec: S}.
type KindDef[S any] struct {
	Name string // stored kind, unique across temco (e.g. "gac-intent")
	// Path is the collection below the DIG and Param the item's path parameter, e.g.
	// "/generic-k8s-intents/:genericK8sIntent/resources" and "genericK8sResource".
	Path, Param string
	// Root: Path is the collection's whole path below /v2, its parent any level (a
	// cluster provider's, a project's, the top level), rather than below the DIG.
	Root bool
	// Multipart: the body is multipart/form-data with a "metadata" part and optional
	// "file" and "files" parts, which Check reads from the request.
	Multipart bool
	// File, if set, makes the body multipart/form-data with a "metadata" part and a
	// "file" part, which File.Attach validates and keeps (Request.SetSealed).
	File *FileDef[S]
	// PostItem: EMCO creates or replaces the kind with a POST on the item, whose path
	// names it: served beside the collection's POST, answering 201.
	PostItem bool
	Check    func(ctx context.Context, r *Request[S]) error
	// Changed runs after a successful create, replace or delete of the resource id; its
	// error is the request's answer, the change stored.
	Changed func(ctx context.Context, id string) error
}

// FileDef is the "file" part of a kind's multipart body.
type FileDef[S any] struct {
	// Required: a create without the file is refused (400).
	Required bool
	// Attach validates the file (Request.File) and keeps it, after Check.
	Attach func(ctx context.Context, r *Request[S]) error
}

// DIGKind makes a ResourceKind of d.
func DIGKind[S any](d KindDef[S]) ResourceKind { return d }

// ClusterKind makes a ResourceKind of d mounted below a cluster (ncm's networks). guard,
// if set, may refuse any create, replace or delete below the cluster (its store id) with
// its error (Conflict, BadRequest): the cluster's lifecycle state decides.
func ClusterKind[S any](d KindDef[S], guard func(ctx context.Context, st *store.Store, cluster string) error) ResourceKind {
	return clusterKind[S]{def: d, guard: guard}
}

type clusterKind[S any] struct {
	def   KindDef[S]
	guard func(context.Context, *store.Store, string) error
}

func (d clusterKind[S]) mount(g *echo.Group, s *Server) {
	coll := routeCluster + d.def.Path
	k := kind[S]{name: d.def.Name, coll: coll, item: coll + "/:" + d.def.Param}
	k.check = func(ctx context.Context, s *Server, r *request[S]) error {
		if d.guard != nil {
			if err := d.guard(ctx, s.Store, r.parent); err != nil {
				return err
			}
		}
		if d.def.Check == nil {
			return nil
		}
		return d.def.Check(ctx, &Request[S]{r: r, s: s})
	}
	if d.guard != nil {
		k.remove = func(c echo.Context) error {
			id, err := fill(c, k.item)
			if err != nil {
				return err
			}
			if err := d.guard(c.Request().Context(), s.Store, parentOf(parentOf(id))); err != nil {
				return fromStore(err)
			}
			return remove(c, s, k)
		}
	}
	register(g, s, k)
}

// A controller's intents leave the DIG's lifecycle alone, as EMCO's controllers do: they
// are read when an operation runs its controllers, so they may change after approve.
func (d KindDef[S]) mount(g *echo.Group, s *Server) {
	coll := d.Path
	if !d.Root {
		coll = routeDIG + d.Path
	}
	k := kind[S]{name: d.Name, coll: coll, item: coll + "/:" + d.Param, multipart: d.Multipart, postItem: d.PostItem}
	if d.Check != nil {
		k.check = func(ctx context.Context, s *Server, r *request[S]) error {
			return d.Check(ctx, &Request[S]{r: r, s: s})
		}
	}
	if d.File != nil {
		k.file = &fileSpec[S]{required: d.File.Required, attach: func(ctx context.Context, s *Server, r *request[S]) error {
			return d.File.Attach(ctx, &Request[S]{r: r, s: s})
		}}
	}
	if d.Changed != nil {
		k.changed = func(ctx context.Context, _ *Server, id string) error { return d.Changed(ctx, id) }
	}
	register(g, s, k)
}

// Request is a create or replace of a controller's resource, being validated.
type Request[S any] struct {
	r *request[S]
	s *Server
}

// ID is the resource's store id; Parent its parent's; DIG the DIG's (DIG kinds).
func (q *Request[S]) ID() string     { return q.r.id }
func (q *Request[S]) Parent() string { return q.r.parent }
func (q *Request[S]) DIG() string    { return digOf(q.r.id) }

// Resource is the decoded body; its Spec may be normalised in place.
func (q *Request[S]) Resource() *model.Resource[S] { return &q.r.res }

// Ref records a reference to another resource (loose: it may be created later).
func (q *Request[S]) Ref(id string) { q.r.ref(id) }

// Field records a queryable attribute.
func (q *Request[S]) Field(k, v string) { q.r.field(k, v) }

// File is the multipart "file" part, if sent.
func (q *Request[S]) File() ([]byte, bool) { return q.r.file, q.r.hasFile }

// Files are the multipart "files" parts.
func (q *Request[S]) Files() []NamedFile { return q.r.files }

// Old is the stored resource a replace replaces (nil on create).
func (q *Request[S]) Old() *store.Doc { return q.r.old }

// SetBlob stores data beside the resource (templates, files).
func (q *Request[S]) SetBlob(data []byte) { q.r.blob = data }

// SetSealed stores data beside the resource sealed with the server's keys, bound to the
// resource's id: templates and files that may hold secrets (a Secret's data).
func (q *Request[S]) SetSealed(data []byte) error {
	if len(data) == 0 {
		q.r.blob, q.r.secret = nil, nil
		return nil
	}
	if q.s.Keys == nil {
		return fmt.Errorf("%s holds data stored sealed, and the API has no encryption key", q.r.id)
	}
	sealed, err := q.s.Keys.Seal(data, []byte(q.r.id))
	if err != nil {
		return err
	}
	q.r.blob, q.r.secret = nil, sealed
	return nil
}

// OldSealed is what SetSealed stored with the resource a replace replaces (nil on create).
func (q *Request[S]) OldSealed() ([]byte, error) {
	if q.r.old == nil {
		return nil, nil
	}
	return OpenSealed(q.s.Keys, q.r.old)
}

// OpenSealed returns what a check stored with SetSealed; a document stored before its kind
// was sealed has it in its blob.
func OpenSealed(keys *seal.Keyring, d *store.Doc) ([]byte, error) {
	if len(d.Secret) == 0 {
		return d.Blob, nil
	}
	if keys == nil {
		return nil, fmt.Errorf("%s is sealed and no key is configured to open it", d.ID)
	}
	return keys.Open(d.Secret, []byte(d.ID))
}

// Store is the resource store, for lookups.
func (q *Request[S]) Store() *store.Store { return q.s.Store }

// App is the store id of the app named by field (a reference to an app of the
// resource's composite app), refused (400) when the name is invalid.
func (q *Request[S]) App(field, name string) (string, error) { return appRef(q.r.id, field, name) }

// OnePerDIG refuses (409, naming it) another resource of kind under the resource's DIG:
// what (e.g. "capacity placement") is one per DIG at most.
func (q *Request[S]) OnePerDIG(ctx context.Context, kind, what string) error {
	return onePerDIG(ctx, q.s, q.r.parent, q.r.id, kind, what)
}

// CheckKubeconfig refuses (400) a file that is no kubeconfig.
func CheckKubeconfig(file []byte) error {
	if _, err := kubeconfig.Parse(file); err != nil {
		return badRequest("invalid kubeconfig: %v", err)
	}
	return nil
}

// BadRequest and Conflict are the errors a check returns: 400 and 409 with the message.
func BadRequest(format string, args ...any) error { return badRequest(format, args...) }
func Conflict(format string, args ...any) error   { return conflict(format, args...) }

// Forbidden is 403 with the message: what the caller may not do, though it could be done.
func Forbidden(format string, args ...any) error {
	return httpErr(http.StatusForbidden, format, args...)
}

// EncodeFiles and DecodeFiles store several files in one blob.
func EncodeFiles(files []NamedFile) []byte { b, _ := json.Marshal(files); return b }
func DecodeFiles(blob []byte) ([]NamedFile, error) {
	var out []NamedFile
	if len(blob) == 0 {
		return nil, nil
	}
	return out, json.Unmarshal(blob, &out)
}
