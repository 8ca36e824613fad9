package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
	snapshots "github.com/temco/temco/internal/core/snapshot"
)

// Snapshots (temco's own): the whole configuration each revision of a DIG was accepted
// with, recorded by the operation's begin (activities/operation), listed, read and
// compared here; a rollback may name one instead of a revision.

// snapshotDiff answers GET DIG/snapshots/{a}/diff/{b}, in the client module's type.
type snapshotDiff = temco.SnapshotDiff

func (s *Server) registerSnapshots(g *echo.Group) {
	s.route(g, listDoc(opDoc{method: http.MethodGet, path: routeDIG + "/snapshots", code: http.StatusOK,
		summary:     "List a DIG's configuration snapshots, newest first",
		description: "temco's own. One snapshot per distinct configuration a revision was accepted with (instantiate, update, migrate; a rollback's revision is its source's), with the revisions it produced; newest first by their newest revision.",
		response:    typeOf[[]snapshots.Summary]()}), s.listSnapshots)
	s.route(g, opDoc{method: http.MethodGet, path: routeDIG + "/snapshots/:snapshot", code: http.StatusOK,
		summary:     "A snapshot: the DIG's whole configuration as canonical JSON",
		description: "temco's own. The answer's sha256 begins with the snapshot's id. Archives and sealed data appear as their sha256 only.",
		response:    typeOf[snapshots.Document]()}, s.getSnapshot)
	s.route(g, opDoc{method: http.MethodGet, path: routeDIG + "/snapshots/:snapshot/diff/:to", code: http.StatusOK,
		summary:     "What changed from one snapshot of a DIG to another",
		description: "temco's own. Each change names the resource (its path below /v2), the field (empty: the whole resource) and added, removed or changed, with the values.",
		response:    typeOf[snapshotDiff]()}, s.diffSnapshots)
}

func (s *Server) snapshotStore() *snapshots.Store { return snapshots.Open(s.Store.Database()) }

// listSnapshots answers a page of the list: a page's token is the position (Seq) of its
// last snapshot, so that one a rollback moves to the top meanwhile is not listed twice.
func (s *Server) listSnapshots(c echo.Context) error {
	page, err := parseListPage(c)
	if err != nil {
		return err
	}
	var before int64 = math.MaxInt64
	if page.after != "" {
		if before, err = strconv.ParseInt(page.after, 10, 64); err != nil {
			return badRequest("continue=%q is invalid: pass the %s header of the previous page as it is", c.QueryParam("continue"), headerContinue)
		}
	}
	dig, err := s.existingDIG(c)
	if err != nil {
		return err
	}
	list, err := s.snapshotStore().List(c.Request().Context(), dig.ID())
	if err != nil {
		return err
	}
	list = slices.DeleteFunc(list, func(x snapshots.Summary) bool { return x.Seq >= before })
	if len(list) > page.limit {
		list = list[:page.limit]
		linkNext(c, strconv.FormatInt(list[len(list)-1].Seq, 10))
	}
	return c.JSON(http.StatusOK, list)
}

func (s *Server) getSnapshot(c echo.Context) error {
	dig, err := s.existingDIG(c)
	if err != nil {
		return err
	}
	snap, err := s.snapshot(c.Request().Context(), dig, c.Param("snapshot"))
	if err != nil {
		return err
	}
	return c.JSONBlob(http.StatusOK, []byte(snap.Document))
}

func (s *Server) diffSnapshots(c echo.Context) error {
	dig, err := s.existingDIG(c)
	if err != nil {
		return err
	}
	var docs [2]snapshots.Document
	for i, id := range []string{c.Param("snapshot"), c.Param("to")} {
		snap, err := s.snapshot(c.Request().Context(), dig, id)
		if err != nil {
			return err
		}
		if docs[i], err = snapshots.Parse([]byte(snap.Document)); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, snapshotDiff{From: c.Param("snapshot"), To: c.Param("to"), Changes: changesOf(snapshots.Diff(docs[0], docs[1]))})
}

// changesOf is a diff's changes in the client module's type, whose fields are
// snapshot.Change's: the conversion does not compile once they differ.
func changesOf(d []snapshots.Change) []temco.Change {
	out := make([]temco.Change, len(d))
	for i, c := range d {
		out[i] = temco.Change(c)
	}
	return out
}

// existingDIG reads the DIG the path names: 404 when it does not exist.
func (s *Server) existingDIG(c echo.Context) (lifecycle.Target, error) {
	dig, err := digRef(c)
	if err != nil {
		return dig, err
	}
	return dig, s.mustExist(c.Request().Context(), dig.ID())
}

// snapshot reads snapshot id of dig: 404 naming it when the DIG has none of that id.
func (s *Server) snapshot(ctx context.Context, dig lifecycle.Target, id string) (*snapshots.Snapshot, error) {
	if !snapshots.ValidID(id) {
		return nil, httpErr(http.StatusNotFound, "%s has no snapshot %q: a snapshot's id is 16 hex digits (GET .../snapshots lists them)", dig, id)
	}
	snap, err := s.snapshotStore().Get(ctx, dig.ID(), id)
	if errors.Is(err, snapshots.ErrNotFound) {
		return nil, httpErr(http.StatusNotFound, "%s has no snapshot %q (GET .../snapshots lists them)", dig, id)
	}
	return snap, err
}

// snapshotRevision is the revision a rollback naming snapshot id returns to: the newest
// revision of the DIG's current instance that the snapshot produced.
func (s *Server) snapshotRevision(ctx context.Context, dig lifecycle.Target, info lifecycle.StateInfo, id string) (int64, error) {
	snap, err := s.snapshot(ctx, dig, id)
	if err != nil {
		return 0, err
	}
	var rev int64
	var others []int64
	for _, r := range snap.Revisions {
		if c, ok := info.RevisionContext(r.Revision); ok && c == r.ContextID {
			rev = max(rev, r.Revision)
		} else {
			others = append(others, r.Revision)
		}
	}
	if rev == 0 {
		slices.Sort(others)
		return 0, badRequest("snapshot %s produced no revision of %s's current instance (it produced revisions %v of earlier instances): instantiate or update to deploy it again",
			id, dig, others)
	}
	return rev, nil
}

// withSnapshotsDeleted runs a DIG's delete, then removes its snapshots.
func (s *Server) withSnapshotsDeleted(del echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := del(c); err != nil || c.Response().Status != http.StatusNoContent {
			return err
		}
		if dig, err := digRef(c); err == nil {
			if err := s.snapshotStore().DeleteDIG(context.WithoutCancel(c.Request().Context()), dig.ID()); err != nil {
				s.Log.Warn("delete snapshots", "dig", dig.ID(), "error", err)
			}
		}
		return nil
	}
}
