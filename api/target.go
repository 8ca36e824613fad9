package api

import (
	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// loadTarget takes the first steps of a handler of a lifecycle target (a DIG, a logical
// cloud, a cluster's networks, a CA certificate intent's stage): it reads the target the
// path names, then runs checks, the handler's reading of the rest of the request (its
// query, its body), in order, so that a bad request answers 400 before the store is read;
// then it loads the target's document and state history, a store error answered as
// fromStore maps it (404 for a target that does not exist).
func (s *Server) loadTarget(c echo.Context, target targetFunc, checks ...func(lifecycle.Target) error) (lifecycle.Target, *store.Doc, lifecycle.StateInfo, error) {
	t, err := target(c)
	if err != nil {
		return t, nil, lifecycle.StateInfo{}, err
	}
	for _, check := range checks {
		if err := check(t); err != nil {
			return t, nil, lifecycle.StateInfo{}, err
		}
	}
	d, info, err := digstate.Load(c.Request().Context(), s.Store, t.ID())
	if err != nil {
		return t, nil, lifecycle.StateInfo{}, fromStore(err)
	}
	return t, d, info, nil
}
