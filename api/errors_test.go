package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
	"go.temporal.io/api/serviceerror"
)

// poolCleared is what the MongoDB driver returns to requests waiting on a pool it cleared
// (its own type is unexported): retryable.
type poolCleared struct{}

func (poolCleared) Error() string {
	return "connection pool for 127.0.0.1:27017 was cleared because another operation failed with: EOF"
}
func (poolCleared) Retryable() bool { return true }

// A database or Temporal that does not answer is the client's to retry (503 with
// Retry-After); anything else unexpected is ours (500); neither reveals the error.
func TestDependencyFailuresAreRetryable(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		code  int
		retry bool
	}{
		{"database timeout", fmt.Errorf("commit x: %w", context.DeadlineExceeded), 503, true},
		{"database unreachable", topology.ServerSelectionError{Wrapped: errors.New("connection refused")}, 503, true},
		{"temporal down", serviceerror.NewUnavailable("frontend unavailable"), 503, true},
		{"database connection pool cleared", fmt.Errorf("find: %w", poolCleared{}), 503, true},
		{"our bug", errors.New("nil map"), 500, false},
	}
	handle := errorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/v2/projects", nil), rec)
			handle(tc.err, c)
			if rec.Code != tc.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if got := rec.Header().Get("Retry-After") != ""; got != tc.retry {
				t.Fatalf("Retry-After set: %v, want %v", got, tc.retry)
			}
			if strings.Contains(rec.Body.String(), tc.err.Error()) || !strings.Contains(rec.Body.String(), `"message"`) {
				t.Fatalf("body %s: want a JSON message that does not reveal the error", rec.Body)
			}
		})
	}
}
