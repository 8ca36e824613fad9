package lifecycle

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strconv"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// NewContextID draws an AppContext id: a positive 63-bit number in decimal, as EMCO's.
func NewContextID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>1, 10)
}

// DrawContextID draws the context of an operation a workflow asks for, once (a side
// effect): a retried activity that starts the operation then finds the one it started.
func DrawContextID(ctx workflow.Context) string {
	var id string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return NewContextID() }).Get(&id)
	return id
}

// ErrorMessage is an error's text without Temporal's wrapping.
func ErrorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}
