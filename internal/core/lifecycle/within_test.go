package lifecycle

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// A non-retryable error stays one with where it happened (Temporal reads only the
// returned error's type: wrapped with %w, it would be retried).
func TestWithin(t *testing.T) {
	err := Within(temporal.NewNonRetryableApplicationError("denied: why", ErrInvalidInput, nil), "enrol %s on %s", "p+c2", "p+c1")
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || err != error(app) || !app.NonRetryable() || app.Type() != ErrInvalidInput ||
		app.Message() != "enrol p+c2 on p+c1: denied: why" {
		t.Errorf("non-retryable: %#v", err)
	}
	plain := errors.New("timeout")
	if err := Within(plain, "enrol %s", "p+c2"); err.Error() != "enrol p+c2: timeout" || !errors.Is(err, plain) || errors.As(err, &app) {
		t.Errorf("retryable: %v", err)
	}
}
