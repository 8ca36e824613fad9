package lifecycle

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// Types of the non-retryable application errors temco's activities and workflows return:
// a retry would fail the same way. Every such error names one of these.
const (
	// ErrInvalidState: the DIG's or logical cloud's state does not allow the operation
	// (the api answers 409).
	ErrInvalidState = "InvalidState"
	// ErrBusy: another operation of the DIG is running (409).
	ErrBusy = "Busy"
	// ErrInvalidInput: the DIG cannot be deployed as specified — a bad placement, chart,
	// kubeconfig or controller — or the request names what is not there, such as a
	// revision (400 when it refuses a request).
	ErrInvalidInput = "InvalidInput"
	// ErrApplyFailed: clusters rejected objects of an instantiate, update or rollback;
	// the rejections are in the context's statuses.
	ErrApplyFailed = "ApplyFailed"
	// ErrDeleteFailed: terminate could not delete some objects.
	ErrDeleteFailed = "DeleteFailed"
	// ErrPruneFailed: an update could not delete objects its previous revision had and
	// the new one has not.
	ErrPruneFailed = "PruneFailed"
	// ErrHookFailed: a blocking workflow a controller asked for (a tac hook) failed or
	// timed out, or the apps were not Ready in time for the ones waiting for Ready.
	ErrHookFailed = "HookFailed"
	// ErrRolloutFailed: a stage of a staged rollout broke its failure budget or deadline,
	// or an operator asked for a rollback; the cause is in the rollout's status.
	ErrRolloutFailed = "RolloutFailed"
	// ErrRefused: an operator's command the running operation cannot take now (409).
	ErrRefused = "Refused"
)

// Within prefixes err's message with where it happened, keeping a non-retryable error
// non-retryable: Temporal judges only the returned error's own type, so a fmt.Errorf
// wrapping would have the activity retried.
func Within(err error, format string, args ...any) error {
	where := fmt.Sprintf(format, args...)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return temporal.NewNonRetryableApplicationError(where+": "+app.Message(), app.Type(), nil)
	}
	return fmt.Errorf("%s: %w", where, err)
}
