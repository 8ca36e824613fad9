package api

import (
	"context"
	"encoding/json"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// kind describes one EMCO resource type {metadata, spec: S} served by the generic
// create/list/get/replace/delete handlers.
type kind[S any] struct {
	name    string          // store kind, e.g. "app"
	coll    string          // collection route, e.g. "/projects/:project/composite-apps"
	item    string          // item route
	version func(*S) string // composite apps: the id ends in /{name}/{version}
	check   func(context.Context, *Server, *request[S]) error
	file    *fileSpec[S] // multipart kinds: what the "file" part is
	// multipart: a multipart kind whose check handles the "file" and "files" parts itself
	// (controllers' kinds).
	multipart bool
	noPut     bool // EMCO has no PUT for this kind (clusters)
	// postItem: EMCO creates or replaces this kind with a POST on the item, whose path
	// names it (policy intents): served beside the collection's POST, answering 201.
	postItem bool
	kvKey    bool // kv kinds: GET item?key=K answers {"value": ...} (EMCO's lookup)
	// state returns the initial lifecycle state of a new resource (DIGs).
	state func() string
	// changed runs after a successful create, replace or delete (un-approving DIGs).
	changed func(ctx context.Context, s *Server, id string) error
	// remove replaces the generic delete (DIGs check their lifecycle state first).
	remove echo.HandlerFunc
}

// fileSpec describes the "file" part of a multipart kind.
type fileSpec[S any] struct {
	required bool
	// attach validates the file and stores it in r.blob or r.secret.
	attach func(context.Context, *Server, *request[S]) error
	// download: GET with Accept application/octet-stream returns the blob.
	download bool
	// orJSON: the body may instead be JSON alone, the file coming otherwise (an app's
	// chart by reference); check then decides whether the file is required.
	orJSON bool
}

// request is one create or replace being validated.
type request[S any] struct {
	id, parent string
	res        model.Resource[S]
	refs       []string          // other resources this one depends on
	fields     map[string]string // queryable attributes
	blob       []byte
	secret     []byte
	file       []byte      // the multipart "file" part
	hasFile    bool        // whether the request carried one
	files      []NamedFile // the multipart "files" parts
	old        *store.Doc  // the stored resource on a replace
	noFile     bool        // check found the file comes otherwise (by reference): none is kept
	owner      string      // who writes it (owner.go): recorded on a create
}

// ref records a dependency on another resource, which must exist.
func (r *request[S]) ref(id string) { r.refs = append(r.refs, id) }

func (r *request[S]) field(k, v string) {
	if r.fields == nil {
		r.fields = map[string]string{}
	}
	r.fields[k] = v
}

// register adds (and documents) the five routes of k.
func register[S any](g *echo.Group, s *Server, k kind[S]) {
	res, many := typeOf[model.Resource[S]](), typeOf[[]model.Resource[S]]()
	body, multipart := res, k.file != nil || k.multipart
	if multipart && (k.file == nil || !k.file.orJSON) {
		body = nil
	}
	// A kind with an operation (DIGs, logical clouds: its own delete) also reaches
	// Temporal and its hooks: only the others' routes are store round trips alone.
	plain := k.remove == nil
	var query []string
	if k.name == model.KindAppProfile {
		query = []string{"app"}
	}
	s.route(g, opDoc{method: http.MethodPost, path: k.coll, summary: "Create a " + k.name, body: body, multipart: multipart,
		code: http.StatusCreated, response: res, creates: true, storeOnly: plain, parentAtCreate: k.check == nil && !multipart},
		func(c echo.Context) error { return create(c, s, k) })
	s.route(g, listDoc(opDoc{method: http.MethodGet, path: k.coll, summary: "List " + k.name + "s", code: http.StatusOK, response: many, query: query, storeOnly: plain}),
		func(c echo.Context) error { return list(c, s, k) })
	s.route(g, opDoc{method: http.MethodGet, path: k.item, summary: "Get a " + k.name, code: http.StatusOK, response: res, storeOnly: plain},
		func(c echo.Context) error { return get(c, s, k) })
	if !k.noPut {
		s.route(g, opDoc{method: http.MethodPut, path: k.item, summary: "Replace (or create) a " + k.name, body: body, multipart: multipart,
			code: http.StatusOK, response: res, storeOnly: plain}, func(c echo.Context) error { return replace(c, s, k) })
	}
	if k.postItem {
		s.route(g, opDoc{method: http.MethodPost, path: k.item, summary: "Create or replace a " + k.name + " (EMCO's POST on the item; the path names it)",
			body: body, code: http.StatusCreated, response: res, storeOnly: plain}, func(c echo.Context) error { return replace(c, s, k) })
	}
	del := k.remove
	if del == nil {
		del = func(c echo.Context) error { return remove(c, s, k) }
	}
	s.route(g, opDoc{method: http.MethodDelete, path: k.item, summary: "Delete a " + k.name, code: http.StatusNoContent, storeOnly: plain,
		targetAtDelete: k.remove == nil}, del)
}

// decode reads the body (JSON, or multipart metadata + file) into a request.
func decode[S any](c echo.Context, k kind[S]) (*request[S], error) {
	r := &request[S]{owner: ownerOf(c.Request().Context())}
	if (k.file != nil || k.multipart) && (k.file == nil || !k.file.orJSON || mediaType(c) == echo.MIMEMultipartForm) {
		f, err := readMultipart(c)
		if err != nil {
			return nil, err
		}
		r.file, r.hasFile, r.files = f.file, f.hasFile, f.files
		if err := decodeJSON(f.metadata, `multipart part "metadata"`, &r.res); err != nil {
			return nil, err
		}
	} else if err := readJSON(c, &r.res); err != nil {
		return nil, err
	}
	if k.postItem && c.Request().Method == http.MethodPost && c.Path() == "/v2"+k.item {
		r.res.Metadata.Name = c.Param(strings.TrimPrefix(path.Base(k.item), ":")) // EMCO: the path names it, not the body
	}
	if err := r.res.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	return r, nil
}

// validate runs the kind's checks and attaches the file part.
func validate[S any](ctx context.Context, s *Server, k kind[S], r *request[S]) error {
	if k.check != nil {
		if err := k.check(ctx, s, r); err != nil {
			return err
		}
	}
	if k.file == nil {
		return nil
	}
	if !r.hasFile {
		if k.file.required && r.old == nil && !r.noFile {
			if k.file.orJSON && k.name == model.KindAppProfile {
				return badRequest("the profile's archive is missing: send it as the multipart part \"file\" or name it in spec.archive")
			}
			if k.file.orJSON {
				return badRequest("the chart is missing: send it as the multipart part \"file\" or name it in spec.chart")
			}
			return badRequest("multipart part \"file\" is missing")
		}
		if r.old != nil && !r.noFile { // a replace without a new file keeps the stored one
			r.blob, r.secret = r.old.Blob, r.old.Secret
		}
		return nil
	}
	return k.file.attach(ctx, s, r)
}

func (r *request[S]) doc(k kind[S]) (*store.Doc, error) {
	body, err := json.Marshal(r.res)
	if err != nil {
		return nil, err
	}
	// References may come later, as EMCO allows (a DIG before its logical cloud, intents
	// before their placement intent); lifecycle operations check them when they are used.
	d := &store.Doc{ID: r.id, Parent: r.parent, Scope: scopeOf(r.id), Kind: k.name, Name: r.res.Metadata.Name,
		Refs: r.refs, LooseRefs: true, Fields: r.fields, Body: string(body), Blob: r.blob, Secret: r.secret, Owner: r.owner}
	switch {
	case r.old != nil:
		d.Rev, d.State = r.old.Rev, r.old.State
	case k.state != nil:
		d.State = k.state()
	}
	return d, nil
}

func create[S any](c echo.Context, s *Server, k kind[S]) error {
	r, err := decode(c, k)
	if err != nil {
		return err
	}
	if r.id, err = newID(c, k, r); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if r.parent, err = fill(c, parentOf(k.coll)); err != nil {
		return err
	}
	atCreate := parentAtCreate(ctx)
	if !atCreate {
		if err := s.mustExist(ctx, r.parent); err != nil {
			return err
		}
	}
	if err := validate(ctx, s, k, r); err != nil {
		return err
	}
	d, err := r.doc(k)
	if err != nil {
		return err
	}
	recordAbove(ctx, d)
	var checkParent func(context.Context, *store.Doc) error
	switch {
	case atCreate && r.parent == "":
		d.Above, d.AboveV = "", 1
	case atCreate:
		checkParent = s.restCreateBelow(d)
	}
	if err := s.Store.CreateChecked(ctx, d, checkParent); err != nil {
		return fromStore(err)
	}
	if err := k.afterChange(ctx, s, d.ID); err != nil {
		return err
	}
	return c.JSONBlob(http.StatusCreated, shown(d))
}

// afterChange runs the kind's change hook, if any.
func (k kind[S]) afterChange(ctx context.Context, s *Server, id string) error {
	if k.changed == nil {
		return nil
	}
	return k.changed(ctx, s, id)
}

// newID is the _id a body names: collection path + name (+ version for composite apps).
func newID[S any](c echo.Context, k kind[S], r *request[S]) (string, error) {
	coll, err := fill(c, k.coll)
	if err != nil {
		return "", err
	}
	id := coll + "/" + r.res.Metadata.Name
	if k.version != nil {
		v := k.version(&r.res.Spec)
		if err := model.ValidateName("spec.compositeAppVersion", v); err != nil {
			return "", badRequest("%v", err)
		}
		id += "/" + v
	}
	return id, nil
}

func list[S any](c echo.Context, s *Server, k kind[S]) error {
	coll, err := fill(c, k.coll)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	parent := parentOf(coll)
	if err := s.mustExist(ctx, parent); err != nil {
		return err
	}
	page, err := parseListPage(c)
	if err != nil {
		return err
	}
	q := store.Query{Parent: parent, Kind: k.name, Fields: listFilter(c, k.name)}
	if p := principal(c); p != nil && !p.Admin && k.name == model.KindProject {
		q.IDs = grantedProjects(p) // in the query, so that a tenant's pages are full
	}
	keys := collKeys(coll)
	docs, err := s.Store.List(ctx, page.query(q, keys))
	if err != nil {
		return err
	}
	return listAnswer(c, page, docs, keys)
}

// listFilter supports ?app= on app profiles.
func listFilter(c echo.Context, kindName string) map[string]string {
	if kindName == model.KindAppProfile {
		if app := c.QueryParam("app"); app != "" {
			return map[string]string{"app": app}
		}
	}
	return nil
}

// bodies renders stored documents as a JSON array.
func bodies(docs []*store.Doc) []byte {
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = string(shown(d))
	}
	return []byte("[" + strings.Join(parts, ",") + "]")
}

// mustExist answers 404 when the parent id (if any) does not exist: a check for a clear
// answer before the work, which the store repeats where it counts (a create's parent,
// after its document is in place). It records what is above a resource created below id.
func (s *Server) mustExist(ctx context.Context, id string) error {
	if id == "" || seenExisting(ctx, id) {
		return nil
	}
	d, err := s.Store.Ownership(ctx, id)
	if store.CodeOf(err) == store.ErrNotFound {
		return fromStore(err)
	}
	if err != nil {
		return err
	}
	seenOf(ctx).parentSeen(d)
	return nil
}

func get[S any](c echo.Context, s *Server, k kind[S]) error {
	id, err := fill(c, k.item)
	if err != nil {
		return err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return fromStore(err)
	}
	if k.file != nil && k.file.download && strings.Contains(c.Request().Header.Get(echo.HeaderAccept), echo.MIMEOctetStream) {
		if len(d.Blob) == 0 {
			return httpErr(http.StatusNotFound, "%s has no uploaded archive: it comes by reference", describe(d.ID))
		}
		return c.Blob(http.StatusOK, echo.MIMEOctetStream, d.Blob)
	}
	if key := c.QueryParam("key"); k.kvKey && key != "" {
		return kvValue(c, d, key)
	}
	return c.JSONBlob(http.StatusOK, shown(d))
}

// kvValue answers the value of key in a kv-pairs resource (the first entry holding it).
func kvValue(c echo.Context, d *store.Doc, key string) error {
	r, err := model.Decode[model.KVSpec](d.Body)
	if err != nil {
		return err
	}
	for _, kv := range r.Spec.KV {
		if v, ok := kv[key]; ok {
			return c.JSON(http.StatusOK, map[string]any{"value": v})
		}
	}
	return httpErr(http.StatusNotFound, "%s has no key %q", describe(d.ID), key)
}

func replace[S any](c echo.Context, s *Server, k kind[S]) error {
	id, err := fill(c, k.item)
	if err != nil {
		return err
	}
	r, err := decode(c, k)
	if err != nil {
		return err
	}
	if r.id, err = newID(c, k, r); err != nil {
		return err
	}
	if r.id != id {
		return badRequest("the body names %s but the path names %s", describe(r.id), describe(id))
	}
	if r.parent, err = fill(c, parentOf(k.coll)); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.mustExist(ctx, r.parent); err != nil {
		return err
	}
	// A replace names no revision, so a write that lost to another (a state change, a
	// concurrent PUT, create or delete) is not the caller's conflict: it is read, checked
	// and written again, now on top of the other write, as if it had come after it.
	for attempt := 1; ; attempt++ {
		d, code, err := replaceOnce(ctx, s, k, r)
		if lostTo(err, code) && attempt < maxReplaceAttempts {
			continue
		}
		if err != nil {
			return fromStore(err)
		}
		if err := k.afterChange(ctx, s, d.ID); err != nil {
			return err
		}
		if c.Request().Method == http.MethodPost {
			code = http.StatusCreated // EMCO's POST on the item
		}
		return c.JSONBlob(code, shown(d))
	}
}

// maxReplaceAttempts bounds how often a PUT that keeps losing to other writers is tried
// before it answers 409.
const maxReplaceAttempts = 10

// lostTo reports whether a replace answered code failed only because another write came
// between its read and its write: the resource changed, was created or was deleted.
func lostTo(err error, code int) bool {
	switch store.CodeOf(err) {
	case store.ErrConflict, store.ErrExists:
		return true
	case store.ErrNotFound:
		return code == http.StatusOK // it was there when read
	}
	return false
}

// replaceOnce reads the stored resource, validates r against it and writes r at the
// revision it read (creating it if there is none).
func replaceOnce[S any](ctx context.Context, s *Server, k kind[S], r *request[S]) (*store.Doc, int, error) {
	old := takeRead(ctx, r.id)
	if old == nil {
		var err error
		if old, err = s.Store.Get(ctx, r.id); err != nil && store.CodeOf(err) != store.ErrNotFound {
			return nil, 0, err
		}
	}
	if old != nil && old.Owner != r.owner { // created by another owner since ownership checked
		return nil, 0, notOwner(old.ID, old.Owner, r.owner)
	}
	r.old, r.refs, r.fields, r.blob, r.secret = old, nil, nil, nil, nil
	if err := validate(ctx, s, k, r); err != nil {
		return nil, 0, err
	}
	d, err := r.doc(k)
	if err != nil {
		return nil, 0, err
	}
	if old == nil {
		recordAbove(ctx, d)
		return d, http.StatusCreated, s.Store.Create(ctx, d)
	}
	return d, http.StatusOK, s.Store.UpdateOver(ctx, d, old)
}

func remove[S any](c echo.Context, s *Server, k kind[S]) error {
	id, err := fill(c, k.item)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.Store.DeleteIf(ctx, id, s.deleteAllowed(ctx)); err != nil {
		if store.CodeOf(err) == store.ErrNotFound {
			if err := s.mayDeleteAbsent(ctx); err != nil {
				return err
			}
		}
		return fromStore(err)
	}
	if err := k.afterChange(ctx, s, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
