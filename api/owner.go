package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/diagnostics"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Ownership: a declarative front door (`temco hub`) reconciles the objects of a hub cluster
// into temco through this API, naming itself in X-Temco-Owner on every request. Each
// resource has one owner, fixed when it is created: that name, or REST (no header). A
// write from anyone else is refused (409), so that the hub and REST clients never undo each
// other's changes: each resource is changed where it is declared. Without the header a
// write below an owned resource is refused too (the hub reconciles what is below its
// objects); with it, only the resource written counts, so that one hub object (a DIG) may
// sit below another's (its composite app) or below REST's. Reads need nothing.
//
// route wraps every handler in ownership; the write paths record the owner (ownerOf) on
// what they create. An owner never changes once stored, so a check made before the write
// still holds when it is made (short of a delete and a re-create in between; a PUT, which
// re-reads what it replaces, checks again). A report about a hub object (diagnostics.go)
// writes no resource: it needs the header, and only the object's owner may send it.

// HeaderOwner names the owner of a request's writes.
const HeaderOwner = temco.HeaderOwner

// maxOwnerLen bounds an owner, e.g. "hub:DeploymentIntentGroup/p1/dig".
const maxOwnerLen = 256

type ownerCtxKey struct{}

// ownerOf is the owner the request of ctx writes as ("": REST).
func ownerOf(ctx context.Context) string {
	o, _ := ctx.Value(ownerCtxKey{}).(string)
	return o
}

// ownership checks the owner header of every request and, on a route that writes, that
// the caller may write what it writes.
func (s *Server) ownership(d opDoc, h echo.HandlerFunc) echo.HandlerFunc {
	resources := resourceRoutes(d.path)
	writes := d.method != http.MethodGet && d.method != http.MethodHead && !d.noOwner
	return func(c echo.Context) error {
		owner, err := requestOwner(c)
		if err != nil {
			return err
		}
		if d.ownerRequired && owner == "" {
			return badRequest("%s is required: send %s<Kind>/<namespace>/<name>, the owner of the declared object", HeaderOwner, diagnostics.OwnerPrefix)
		}
		if !writes {
			return h(c)
		}
		target, parent, err := writeTarget(c, d, resources)
		if err != nil {
			return err
		}
		ctx := context.WithValue(c.Request().Context(), ownerCtxKey{}, owner)
		// A PUT replaces what it reads: the check's read of it serves the handler.
		m := &seen{found: map[string]*store.Doc{}, keepTarget: d.method == http.MethodPut}
		ctx = context.WithValue(ctx, seenCtxKey{}, m)
		switch {
		case d.parentAtCreate && owner == "":
			m.parentAtCreate = true // the handler's create checks the parent (restCreateBelow)
		case d.targetAtDelete:
			m.atDelete = &parent // the handler's delete checks the target (deleteAllowed)
		default:
			if err := s.mayWrite(ctx, owner, target, parent); err != nil {
				return err
			}
		}
		c.SetRequest(c.Request().WithContext(ctx))
		return h(c)
	}
}

// requestOwner reads the header: 403 from anyone but an admin, 400 when malformed.
func requestOwner(c echo.Context) (string, error) {
	values := c.Request().Header.Values(HeaderOwner)
	if len(values) == 0 {
		return "", nil
	}
	// temco hub acting for a project (HeaderActAs) still owns what it writes.
	if p := principal(c); p != nil && !p.Admin && !p.DelegatedByAdmin() {
		return "", httpErr(http.StatusForbidden, "%s may be sent only with the admin role (temco hub's token); %q writes as REST: leave the header out", HeaderOwner, p.Subject)
	}
	if len(values) > 1 {
		return "", badRequest("%s is sent %d times: send it once", HeaderOwner, len(values))
	}
	if err := validOwner(values[0]); err != nil {
		return "", badRequest("%s %.64q is invalid: %v", HeaderOwner, values[0], err)
	}
	return values[0], nil
}

// reportedByOwner checks, on a route whose header is required (a report about a hub
// object: diagnostics.go), that the request comes from the object's owner, want.
func reportedByOwner(c echo.Context, want string) error {
	if got := c.Request().Header.Get(HeaderOwner); got != want { // present and valid: ownership checked it
		return conflict("%s %q is not the owner of the declared object %q: only %q reports it",
			HeaderOwner, got, strings.TrimPrefix(want, diagnostics.OwnerPrefix), want)
	}
	return nil
}

// validOwner accepts 1 to maxOwnerLen printable ASCII characters, no spaces.
func validOwner(o string) error {
	if o == "" {
		return fmt.Errorf("it is empty (leave the header out to write as REST)")
	}
	if len(o) > maxOwnerLen {
		return fmt.Errorf("it is %d characters long: %d at most", len(o), maxOwnerLen)
	}
	for i := range len(o) {
		if o[i] < '!' || o[i] > '~' {
			return fmt.Errorf("character %d is not printable ASCII (spaces are not allowed either)", i+1)
		}
	}
	return nil
}

// resourceRoutes are the routes of the resources path passes through, outermost first:
// each prefix ending in a parameter that no other follows (a composite app's name is
// followed by its version, which ends its id).
func resourceRoutes(path string) []string {
	segs := strings.Split(path, "/")
	var out []string
	for i, seg := range segs {
		if strings.HasPrefix(seg, ":") && (i+1 == len(segs) || !strings.HasPrefix(segs[i+1], ":")) {
			out = append(out, strings.Join(segs[:i+1], "/"))
		}
	}
	return out
}

// writeTarget is the resource a write changes (the item of its path, or the one it acts on:
// a DIG's instantiate) and its parent; a create on a collection changes no existing
// resource: target is "" and parent the collection's owner.
func writeTarget(c echo.Context, d opDoc, resources []string) (target, parent string, err error) {
	n := len(resources)
	if d.creates && n > 0 {
		parent, err = fill(c, resources[n-1])
		return "", parent, err
	}
	if n > 1 {
		if parent, err = fill(c, resources[n-2]); err != nil {
			return "", "", err
		}
	}
	if n > 0 {
		target, err = fill(c, resources[n-1])
	}
	return target, parent, err
}

// mayWrite answers 409 unless owner may write target (its owner must be the same; a target
// that does not exist is being created) below parent (REST may not write below an owned
// resource). target "" is a create below parent.
func (s *Server) mayWrite(ctx context.Context, owner, target, parent string) error {
	if target != "" {
		d, err := s.targetOwner(ctx, target)
		switch {
		case store.CodeOf(err) == store.ErrNotFound: // created by this write (a PUT), below parent
		case err != nil:
			return err
		default:
			return s.mayWriteExisting(ctx, owner, d)
		}
	}
	if owner != "" {
		return nil
	}
	m := seenOf(ctx)
	for id := parent; ; {
		if id == "" {
			m.clearAbove()
			return nil
		}
		d, err := s.Store.Ownership(ctx, id)
		switch {
		case store.CodeOf(err) == store.ErrNotFound:
			return nil // the handler answers 404
		case err != nil:
			return err
		case d.Owner != "":
			return ownedConflict(id, d.Owner)
		}
		if m != nil {
			m.found[id] = nil
		}
		if d.AboveV == 1 {
			if d.Above != "" {
				return s.ownedAbove(ctx, d.Above)
			}
			m.clearAbove()
			return nil
		}
		id = d.Parent
	}
}

// mayWriteExisting is mayWrite of d, as read.
func (s *Server) mayWriteExisting(ctx context.Context, owner string, d *store.Doc) error {
	if d.Owner != owner {
		return notOwner(d.ID, d.Owner, owner)
	}
	if m := seenOf(ctx); m != nil {
		m.found[d.Parent] = nil // a resource's parent is not deleted while it exists
	}
	if d.AboveV == 1 { // what is above it was recorded when it was created
		if owner == "" && d.Above != "" {
			return s.ownedAbove(ctx, d.Above)
		}
		return nil
	}
	return s.mayWrite(ctx, owner, "", d.Parent)
}

// deleteAllowed is the owner check of a delete whose route leaves it to the delete
// (opDoc.targetAtDelete), made on the resource as store.DeleteIf marks it: nil otherwise.
func (s *Server) deleteAllowed(ctx context.Context) func(context.Context, *store.Doc) error {
	if m := seenOf(ctx); m == nil || m.atDelete == nil {
		return nil
	}
	owner := ownerOf(ctx)
	return func(ctx context.Context, d *store.Doc) error { return s.mayWriteExisting(ctx, owner, d) }
}

// mayDeleteAbsent is the owner check deleteAllowed's delete found nothing for: a REST
// delete below an owned resource answers 409, as mayWrite does, before the 404.
func (s *Server) mayDeleteAbsent(ctx context.Context) error {
	if m := seenOf(ctx); m != nil && m.atDelete != nil && ownerOf(ctx) == "" {
		return s.mayWrite(ctx, "", "", *m.atDelete)
	}
	return nil
}

// ownedAbove is the 409 of a REST write below id, an owned resource.
func (s *Server) ownedAbove(ctx context.Context, id string) error {
	d, err := s.Store.Ownership(ctx, id)
	if err != nil {
		return err
	}
	return ownedConflict(id, d.Owner)
}

// ownedConflict is the 409 of a REST write below id, owned by owner.
func ownedConflict(id, owner string) error {
	return conflict("%s is owned by %q: change what is below it there, not over REST (%s)", describe(id), owner, HeaderOwner)
}

// restCreateBelow is mayWrite of a REST create of d, made on its parent p as the store's
// create reads it after its pending insert (store.CreateChecked): the read mayWrite
// would make before is spared. It records on d that nothing above it is owned.
func (s *Server) restCreateBelow(d *store.Doc) func(context.Context, *store.Doc) error {
	return func(ctx context.Context, p *store.Doc) error {
		switch {
		case p.Owner != "":
			return ownedConflict(p.ID, p.Owner)
		case p.AboveV == 1 && p.Above != "":
			return s.ownedAbove(ctx, p.Above)
		case p.AboveV != 1: // written before Above was recorded: walk up from its parent
			m := &seen{found: map[string]*store.Doc{}}
			if err := s.mayWrite(context.WithValue(ctx, seenCtxKey{}, m), "", "", p.Parent); err != nil || !m.aboveKnown {
				return err
			}
		}
		d.Above, d.AboveV = "", 1
		return nil
	}
}

// seen holds the resources a write request found existing while checking who may write
// (mayWrite walks up from the parent), so that the handler's own check of the parent
// (mustExist) need not read it again; for a PUT, the document it replaces as read
// (keepTarget), for the handler's first attempt; and what is above a resource it creates.
type seen struct {
	found      map[string]*store.Doc // nil: known to exist, not kept
	keepTarget bool
	// above is the nearest owned resource above the parent and the parent itself, where
	// aboveKnown: recorded on a resource the request creates (store.Doc.Above).
	above      string
	aboveKnown bool
	// parentAtCreate: the REST owner check of a create is left to its store create
	// (opDoc.parentAtCreate).
	parentAtCreate bool
	// atDelete: the owner check of a delete is left to its store delete
	// (opDoc.targetAtDelete); it points to the target's parent.
	atDelete *string
}

// parentAtCreate reports whether the request of ctx leaves its owner check to its create.
func parentAtCreate(ctx context.Context) bool {
	m := seenOf(ctx)
	return m != nil && m.parentAtCreate
}

// clearAbove records that nothing above the created resource is owned.
func (m *seen) clearAbove() {
	if m != nil {
		m.above, m.aboveKnown = "", true
	}
}

// parentSeen records what is above a resource created below parent d.
func (m *seen) parentSeen(d *store.Doc) {
	switch {
	case m == nil:
	case d.Owner != "":
		m.above, m.aboveKnown = d.ID, true
	case d.AboveV == 1:
		m.above, m.aboveKnown = d.Above, true
	}
}

// recordAbove sets on d, created by the request of ctx, what is above it, when known.
func recordAbove(ctx context.Context, d *store.Doc) {
	if m := seenOf(ctx); m != nil && m.aboveKnown {
		d.Above, d.AboveV = m.above, 1
	}
}

type seenCtxKey struct{}

func seenOf(ctx context.Context) *seen {
	m, _ := ctx.Value(seenCtxKey{}).(*seen)
	return m
}

// seenExisting reports whether the request of ctx found id existing already.
func seenExisting(ctx context.Context, id string) bool {
	m := seenOf(ctx)
	if m == nil {
		return false
	}
	_, ok := m.found[id]
	return ok
}

// targetOwner is Ownership of the resource a write changes; a PUT reads it whole and keeps it.
func (s *Server) targetOwner(ctx context.Context, id string) (*store.Doc, error) {
	m := seenOf(ctx)
	if m == nil || !m.keepTarget {
		return s.Store.Ownership(ctx, id)
	}
	d, err := s.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	m.found[id] = d
	return d, nil
}

// takeRead returns the document id as the request's ownership check read it (nil: none
// kept), once: a write that is tried again reads again.
func takeRead(ctx context.Context, id string) *store.Doc {
	m := seenOf(ctx)
	if m == nil {
		return nil
	}
	d := m.found[id]
	if d != nil {
		m.found[id] = nil
	}
	return d
}

// mayChange is mayWrite of an existing resource id for the request of ctx.
func (s *Server) mayChange(ctx context.Context, id string) error {
	return s.mayWrite(ctx, ownerOf(ctx), id, "")
}

// notOwner is the 409 of owner's write to id, owned by stored.
func notOwner(id, stored, owner string) error {
	switch {
	case owner == "":
		return conflict("%s is owned by %q: change it there, not over REST (%s)", describe(id), stored, HeaderOwner)
	case stored == "":
		return conflict("%s is owned by REST (it was created without %s), not by %q: change it over REST", describe(id), HeaderOwner, owner)
	}
	return conflict("%s is owned by %q, not by %q (%s): change it there", describe(id), stored, owner, HeaderOwner)
}

// ownAll records the request's owner on docs, created together, and checks that it may
// create them below their parents outside docs (a cluster import's logical clouds).
func (s *Server) ownAll(ctx context.Context, docs []*store.Doc) error {
	owner, ours, checked := ownerOf(ctx), map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		d.Owner, ours[d.ID] = owner, true
	}
	for _, d := range docs {
		if ours[d.Parent] || checked[d.Parent] {
			continue
		}
		checked[d.Parent] = true
		if err := s.mayWrite(ctx, owner, "", d.Parent); err != nil {
			return err
		}
	}
	return nil
}

// shown is the answer of stored resource d: its body, with "owner" beside metadata and
// spec when it has one (REST's resources keep EMCO's shape).
func shown(d *store.Doc) []byte {
	body := d.Body
	if d.Kind == model.KindCluster {
		body = withAccess(body)
	}
	rest, ok := strings.CutPrefix(body, "{")
	if d.Owner == "" || !ok {
		return []byte(body)
	}
	owner, _ := json.Marshal(d.Owner)
	if !strings.HasPrefix(strings.TrimSpace(rest), "}") {
		rest = "," + rest
	}
	return []byte(`{"owner":` + string(owner) + rest)
}

// withAccess is a cluster's stored body with spec.access, which registrations stored
// before it was (2026-12-06) lack: derived as the worker derives it.
func withAccess(body string) string {
	if strings.Contains(body, `"access"`) {
		return body
	}
	var r model.Resource[model.ClusterSpec]
	if json.Unmarshal([]byte(body), &r) != nil {
		return body
	}
	r.Spec.Access = r.Spec.AccessOf()
	b, err := json.Marshal(r)
	if err != nil {
		return body
	}
	return string(b)
}

// ownerParam documents the header on every route that writes.
var ownerParam = map[string]any{"name": HeaderOwner, "in": "header", "required": false,
	"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": maxOwnerLen, "pattern": `^[!-~]+$`},
	"description": "temco hub's name for the object it reconciles (admin tokens only, else 403). A resource created with it is owned by it, " +
		`answers it as "owner" beside metadata and spec, and is written only with it; a resource created without it is REST's, written only ` +
		"without it; without it nothing below an owned resource is written either (409 otherwise)."}

// reportOwnerParam documents the header of a report about a hub object (diagnostics.go).
var reportOwnerParam = map[string]any{"name": HeaderOwner, "in": "header", "required": true,
	"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": maxOwnerLen, "pattern": `^[!-~]+$`},
	"description": `"hub:" + the declared object (admin tokens only, else 403): 400 without it, 409 when it names another object.`}
