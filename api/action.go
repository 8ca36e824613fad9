package api

import (
	"net/http"
	"reflect"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/store"
)

// RouteDIG is the route of a DIG from the API root, for kinds mounted below it.
const RouteDIG = routeDIG

// Action is a route below an item of an OwnKind (POST <item>/start): it acts on the stored
// item, which must exist (else 404), and answers itself.
type Action struct {
	Method, Path, Summary string // Path below the item, e.g. "/start"
	Code                  int    // success status, for the OpenAPI document
	Query                 []string
	Body, Response        reflect.Type // JSON body and success body (nil: none), for the OpenAPI document
	// Handle answers the request; its errors are answered as the API's are
	// (BadRequest, Conflict, an echo.HTTPError, or 500/503).
	Handle func(c echo.Context, item *store.Doc) error
}

func (a Action) mount(g *echo.Group, s *Server, item string) {
	s.route(g, opDoc{method: a.Method, path: item + a.Path, summary: a.Summary, code: a.Code, body: a.Body,
		response: a.Response, query: a.Query}, func(c echo.Context) error {
		id, err := fill(c, item)
		if err != nil {
			return err
		}
		d, err := s.Store.Get(c.Request().Context(), id)
		if err != nil {
			return fromStore(err)
		}
		return a.Handle(c, d)
	})
}

// NotFound is the error a handler returns for something missing: 404 with the message.
func NotFound(format string, args ...any) error { return httpErr(http.StatusNotFound, format, args...) }
