package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/store"
)

// OwnKind describes a resource of a built-in service with a lifecycle of its own (ca-certs'
// certificate intents and what belongs to them), mounted anywhere below the API root.
type OwnKind[S any] struct {
	// Path is the collection route from the API root, e.g.
	// "/cluster-providers/:clusterProvider/ca-certs"; Param names the item.
	KindDef[S]
	// Guard, if set, may refuse a replace or a delete of an item (its store id) with its
	// error (Conflict, BadRequest): the lifecycle state decides.
	Guard func(ctx context.Context, st *store.Store, id string, contexts *appctx.Store) error
	// Changed, if set, runs after a create, replace or delete of an item (its store id).
	Changed func(ctx context.Context, st *store.Store, id string, contexts *appctx.Store) error
	// Remove, if set, replaces the generic delete of an item: it deletes what belongs to
	// the item with it, after Guard allowed it.
	Remove func(ctx context.Context, st *store.Store, contexts *appctx.Store, id string) error
	// Actions are routes below an item (workflowmgr's start, status and cancel).
	Actions []Action
}

// Mount makes a ResourceKind of d.
func (d OwnKind[S]) Mount() ResourceKind { return ownKind[S]{d} }

type ownKind[S any] struct{ def OwnKind[S] }

func (d ownKind[S]) mount(g *echo.Group, s *Server) {
	def := d.def
	k := kind[S]{name: def.Name, coll: def.Path, item: def.Path + "/:" + def.Param, multipart: def.Multipart}
	k.check = func(ctx context.Context, s *Server, r *request[S]) error {
		if def.Guard != nil && r.old != nil {
			if err := def.Guard(ctx, s.Store, r.id, s.Contexts); err != nil {
				return err
			}
		}
		if def.Check == nil {
			return nil
		}
		return def.Check(ctx, &Request[S]{r: r, s: s})
	}
	if def.Changed != nil {
		k.changed = func(ctx context.Context, s *Server, id string) error {
			return def.Changed(ctx, s.Store, id, s.Contexts)
		}
	}
	if def.Guard != nil || def.Remove != nil {
		k.remove = func(c echo.Context) error {
			id, err := fill(c, k.item)
			if err != nil {
				return err
			}
			ctx := c.Request().Context()
			if def.Guard != nil {
				if err := def.Guard(ctx, s.Store, id, s.Contexts); err != nil {
					return fromStore(err)
				}
			}
			if def.Remove == nil {
				return remove(c, s, k)
			}
			if err := def.Remove(ctx, s.Store, s.Contexts, id); err != nil {
				return fromStore(err)
			}
			if err := k.afterChange(ctx, s, id); err != nil {
				return err
			}
			return c.NoContent(http.StatusNoContent)
		}
	}
	register(g, s, k)
	for _, a := range def.Actions {
		a.mount(g, s, k.item)
	}
}
