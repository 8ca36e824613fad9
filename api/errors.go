package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
	"go.temporal.io/api/serviceerror"

	"github.com/temco/temco/internal/core/store"
)

func httpErr(code int, format string, args ...any) *echo.HTTPError {
	return echo.NewHTTPError(code, fmt.Sprintf(format, args...))
}

func badRequest(format string, args ...any) *echo.HTTPError {
	return httpErr(http.StatusBadRequest, format, args...)
}

func conflict(format string, args ...any) *echo.HTTPError {
	return httpErr(http.StatusConflict, format, args...)
}

// fromStore maps a store error to an HTTP error with a message naming the resources.
func fromStore(err error) error {
	var e *store.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code {
	case store.ErrNotFound, store.ErrParentMissing:
		return httpErr(http.StatusNotFound, "%s not found", describe(e.ID))
	case store.ErrRefMissing:
		return httpErr(http.StatusNotFound, "referenced %s not found", describe(e.ID))
	case store.ErrExists:
		return conflict("%s already exists", describe(e.ID))
	case store.ErrHasChildren:
		return conflict("%s cannot be deleted: delete its %s first", describe(e.ID), describe(e.Other))
	case store.ErrReferenced:
		return conflict("%s cannot be deleted: it is used by %s", describe(e.ID), describe(e.Other))
	case store.ErrConflict:
		return conflict("%s was changed by another request; read it again and retry", describe(e.ID))
	case store.ErrBusy:
		return conflict("%s %s; retry", describe(e.ID), e.Msg)
	}
	return err
}

// errorHandler answers every error as JSON {"message": ...}. Errors that are not
// HTTP errors are ours, not the caller's: they are logged and answered with a 500
// that reveals nothing but the request id.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var he *echo.HTTPError
		if !errors.As(fromStore(err), &he) {
			rid := c.Response().Header().Get(echo.HeaderXRequestID)
			if unavailable(err) {
				log.Warn("dependency unavailable", "request_id", rid, "method", c.Request().Method, "path", c.Path(), "error", err)
				c.Response().Header().Set("Retry-After", "1")
				he = httpErr(http.StatusServiceUnavailable, "temporarily unavailable: the database or Temporal did not answer; retry (request id %s)", rid)
			} else {
				log.Error("request failed", "request_id", rid, "method", c.Request().Method, "path", c.Path(), "error", err)
				he = httpErr(http.StatusInternalServerError, "internal error (request id %s)", rid)
			}
		}
		msg, ok := he.Message.(string)
		if !ok {
			msg = http.StatusText(he.Code)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(he.Code)
			return
		}
		_ = c.JSON(he.Code, map[string]string{"message": msg})
	}
}

// unavailable tells a dependency's passing failure (MongoDB or Temporal did not answer in
// time, or at all) from our own: the client may retry it. A failed create leaves nothing
// behind (store.Create withdraws it), so a retry is safe.
func unavailable(err error) bool {
	if mongo.IsTimeout(err) || mongo.IsNetworkError(err) || errors.As(err, &topology.ServerSelectionError{}) {
		return true
	}
	// The driver clears a connection pool when one of its connections breaks (the database
	// restarted): the requests waiting on that pool get this error, which is neither a
	// network error nor a timeout (found by the chaos run: a 500 when FerretDB was killed).
	var pool driver.RetryablePoolError
	if errors.As(err, &pool) && pool.Retryable() {
		return true
	}
	var (
		down *serviceerror.Unavailable
		late *serviceerror.DeadlineExceeded
		full *serviceerror.ResourceExhausted
	)
	return errors.As(err, &down) || errors.As(err, &late) || errors.As(err, &full)
}
