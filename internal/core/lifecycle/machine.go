package lifecycle

import (
	"fmt"
	"slices"
	"strings"
)

// Operations the machines rule on beside OpInstantiate, OpTerminate, OpUpdate,
// OpRollback and OpMigrate, which the lifecycle workflows run: the api runs these itself.
const (
	// OpMigrateInto is a migrate seen from its target, whose workflow runs it (OpMigrate
	// is the origin's, which records Migrated at the end).
	OpMigrateInto = "migrate into"
	OpApprove     = "approve"
	OpModify      = "modify" // a change of a DIG or one of its intents
	OpDelete      = "delete"
	// OpHost is a DIG's instantiate into a logical cloud, as the cloud's state allows it.
	OpHost = "host"
)

// Stop is not in the tables: it may start whenever an operation runs (the lifecycle
// workflow knows), whatever the state; what it records is the Stopped of that operation.

// The states, short for the tables.
const (
	created            = StateCreated
	approved           = StateApproved
	instantiated       = StateInstantiated
	instantiateStopped = StateInstantiateStopped
	terminated         = StateTerminated
	terminateStopped   = StateTerminateStopped
	updated            = StateUpdated
	applied            = StateApplied
	migrated           = StateMigrated
)

// Rule lets Op start from each state of From; a rule with no From, the last of its
// Op, lets it start from any other state, known or not.
type Rule struct {
	Op   string
	From []string
	// To is the state Op records; "" records none: the state stays (or, for a delete,
	// the target goes).
	To string
	// Replaced is the state recorded, before To, for the context a new revision
	// replaces (update, rollback).
	Replaced string
	// Stopped is the state recorded when a stop ends Op's workflow.
	Stopped string
	// Unless names the operation that recorded From: while it still runs (its context's
	// status says so), Op is refused all the same.
	Unless string
}

// Machine is the lifecycle of one kind of target.
type Machine struct {
	Kind   string   // what the target is, for errors about the machine itself
	States []string // every state a target of this kind can be in
	// Initial is the state of a target with no history (clusters registered before
	// their network intents had a lifecycle); "" when every target starts with one.
	Initial string
	Ops     []string // every operation Rules rule on
	Rules   []Rule
}

// Transition is an operation the machine lets start.
type Transition struct {
	Target, Op, From string
	To, Replaced     string // as in Rule: To "" records no state
	Stopped, Unless  string
}

// Start answers whether op may start on target (named as the caller's messages name
// it) in state: the transition, or a *Refused. It is the one question callers ask.
func (m *Machine) Start(target, op, state string) (Transition, error) {
	if !m.Has(op) {
		return Transition{}, fmt.Errorf("%s: a %s has no %s operation", target, m.Kind, op)
	}
	if state == "" && m.Initial != "" {
		state = m.Initial
	}
	for _, r := range m.Rules {
		if r.Op == op && (r.From == nil || slices.Contains(r.From, state)) {
			return Transition{Target: target, Op: op, From: state, To: r.To, Replaced: r.Replaced, Stopped: r.Stopped, Unless: r.Unless}, nil
		}
	}
	return Transition{}, &Refused{Target: target, Op: op, State: state, Needs: m.needs(op)}
}

// Has reports whether op is one of the machine's operations.
func (m *Machine) Has(op string) bool { return slices.Contains(m.Ops, op) }

// Allows is Start's answer without the transition.
func (m *Machine) Allows(op, state string) bool {
	_, err := m.Start("", op, state)
	return err == nil
}

// needs lists the states op changes a target from, in the table's order (every state it
// starts from when it changes none).
func (m *Machine) needs(op string) []string {
	var changing, all []string
	for _, r := range m.Rules {
		if r.Op != op {
			continue
		}
		all = append(all, r.From...)
		if r.To != "" {
			changing = append(changing, r.From...)
		}
	}
	if len(changing) == 0 {
		return all
	}
	return changing
}

// runningStatus is the status of a context while the operation that recorded it runs.
var runningStatus = map[string]string{OpTerminate: StatusTerminating}

// begunStatus is the status an operation's begin gives the context it records, until
// the operation's workflow ends it.
var begunStatus = map[string]string{OpInstantiate: StatusInstantiating, OpTerminate: StatusTerminating}

// Resumes tells whether op, refused in state, is asked again for a transition op itself
// recorded and never ended: state is where op leads, and status (its context's) says op
// began and has not ended. Such a request is passed on to the lifecycle workflow, which
// runs op for that context (its begin recognises its own record) or says that it runs:
// without it, an answer lost after the begin (with an api, or with a Temporal server
// before the begin waited for the update's acceptance) would leave the target in a
// transition nothing runs and every operation refuses.
func (m *Machine) Resumes(op, state, status string) bool {
	if status == "" || status != begunStatus[op] {
		return false
	}
	for _, r := range m.Rules {
		if r.Op == op && r.To != "" && r.To == state {
			return true
		}
	}
	return false
}

// Settle refuses t while the operation it must wait for (Unless) still runs; status is
// the status of the context of t's state, which callers read only when Unless is set.
func (t Transition) Settle(status string) error {
	if t.Unless == "" || status != runningStatus[t.Unless] {
		return nil
	}
	return &Refused{Target: t.Target, Op: t.Op, State: t.From, Running: t.Unless}
}

// stoppedOp tells which operation stopped from the status its context ended in.
var stoppedOp = map[string]string{
	StatusInstantiateStopped: OpInstantiate,
	StatusUpdateStopped:      OpUpdate,
	StatusTerminateStopped:   OpTerminate,
}

// StoppedState is the state a stop records for an operation whose context ended in
// status: that operation's Stopped. A stop that ended otherwise (cancelled after the
// stop: a failed status) records InstantiateStopped, from which terminate is the way on.
func (m *Machine) StoppedState(status string) string {
	for _, r := range m.Rules {
		if r.Op == stoppedOp[status] && r.Stopped != "" {
			return r.Stopped
		}
	}
	return instantiateStopped
}

// Refused is the error for an operation the target's state does not allow (the api
// answers 409; activities fail with ErrInvalidState).
type Refused struct {
	Target, Op, State string
	Needs             []string // the states Op may start from
	Running           string   // the operation still running that refuses Op, if that is why
}

func (e *Refused) Error() string {
	switch {
	case e.Running != "":
		return fmt.Sprintf("%s is still %s; %s it once the %s completed", e.Target, strings.ToLower(runningStatus[e.Running]), e.Op, e.Running)
	case e.Op == OpDelete:
		return fmt.Sprintf("%s is %s: terminate it before deleting it", e.Target, e.State)
	}
	return fmt.Sprintf("%s is %s: %s needs one of %v", e.Target, e.State, e.Op, e.Needs)
}
