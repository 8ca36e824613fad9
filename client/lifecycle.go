package client

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// The lifecycle operations, each the last segment of its route below a DIG (and, for
// instantiate, update, terminate and stop, below a logical cloud).
const (
	OpApprove     = "approve"
	OpInstantiate = "instantiate"
	OpUpdate      = "update"
	OpRollback    = "rollback"
	OpTerminate   = "terminate"
	OpStop        = "stop"
	OpMigrate     = "migrate"
)

// StateCreated is the state of a target with no operation recorded yet.
const StateCreated = "Created"

// OpAccepted is the API's 202 to an operation: the workflow that carries it out and the
// context (revision) it works on.
type OpAccepted struct {
	Op         string `json:"op"`
	ContextID  string `json:"contextId"`
	Revision   int64  `json:"revision"`
	WorkflowID string `json:"workflowId"`
}

// RollbackRequest is the body of a rollback: the revision to return to, by number or
// by the id of the snapshot whose newest revision it is.
type RollbackRequest struct {
	Spec RollbackSpec `json:"spec"`
}

// RollbackSpec names a rollback's revision: Revision, or Snapshot.
type RollbackSpec struct {
	Revision string `json:"revision,omitempty"`
	Snapshot string `json:"snapshot,omitempty"` // a snapshot's id: its newest revision
}

// Operate starts op on the lifecycle target at path (a DIG, a logical cloud) with body
// (nil for none; a RollbackRequest for a rollback). A state the operation may not start
// from, or another operation running, is a refusal (409).
func (c *Client) Operate(ctx context.Context, target, op string, body any) (OpAccepted, error) {
	var a OpAccepted
	err := c.Do(ctx, Request{Method: http.MethodPost, Path: target + "/" + op, Body: body}, &a)
	return a, err
}

// StatusQuery is the status read Status makes: how far the context's objects got
// (deployed), counted rather than listed (summary).
const StatusQuery = "/status?status=deployed&output=summary"

// Status is a lifecycle target's status, as GET target/status?status=deployed&output=summary
// answers it for a DIG, a logical cloud or a cluster's network intents (the fields every
// kind has).
type Status struct {
	States StatusStates `json:"states"`
	// DeployedStatus is the status of the target's context: how far its last operation
	// got (Instantiating, Instantiated, InstantiateFailed, Terminating, ...).
	DeployedStatus string     `json:"deployedStatus"`
	Error          string     `json:"error,omitempty"` // why its operation failed
	Operation      *Operation `json:"operation,omitempty"`
}

// StatusStates is a status's state history.
type StatusStates struct {
	Actions []StatusAction `json:"actions"` // oldest first
}

// StatusAction is one entry of a status's state history, in EMCO's names.
type StatusAction struct {
	State    string    `json:"state"`
	Instance string    `json:"instance"` // the context
	Time     time.Time `json:"time"`
	Revision int64     `json:"revision"`
}

// State is the target's lifecycle state: its last action's, StateCreated when none.
func (s Status) State() string {
	if n := len(s.States.Actions); n > 0 {
		return s.States.Actions[n-1].State
	}
	return StateCreated
}

// Running reports whether an operation of the target is under way.
func (s Status) Running() bool { return running(s.Operation, s.DeployedStatus) }

// Failed reports whether the target's last operation failed.
func (s Status) Failed() bool { return failed(s.DeployedStatus) }

// Status reads the status of the lifecycle target at path.
func (c *Client) Status(ctx context.Context, target string) (Status, error) {
	var s Status
	err := c.Do(ctx, Request{Method: http.MethodGet, Path: target + StatusQuery}, &s)
	return s, err
}

// running: an operation is named, or the context's status is one an operation holds
// while it runs (EMCO's Instantiating, Terminating; temco's Updating).
func running(op *Operation, status string) bool {
	return op != nil || strings.HasSuffix(status, "ing")
}

// failed: the context's status is one of a failed operation (InstantiateFailed,
// TerminateFailed, UpdateFailed).
func failed(status string) bool { return strings.HasSuffix(status, "Failed") }
