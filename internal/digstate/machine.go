package digstate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/temco/temco/internal/lifecycle"
)

// Operations the machines rule on. The lifecycle workflows run the first four; the
// api runs the others itself.
const (
	Instantiate = lifecycle.OpInstantiate
	Terminate   = lifecycle.OpTerminate
	Update      = lifecycle.OpUpdate
	Rollback    = lifecycle.OpRollback
	// Migrate moves a DIG's running deployment to another DIG (MigrateInto, on the
	// target): the target's workflow runs it; the origin records Migrated at the end.
	Migrate     = lifecycle.OpMigrate
	MigrateInto = "migrate into"
	Approve     = "approve"
	Modify      = "modify" // a change of a DIG or one of its intents
	Delete      = "delete"
	// Host is a DIG's instantiate into a logical cloud, as the cloud's state allows it.
	Host = "host"
)

// Stop is not in the tables: it may start whenever an operation runs (the lifecycle
// workflow knows), whatever the state; what it records is the Stopped of that operation.

// The states, short for the tables.
const (
	created            = lifecycle.StateCreated
	approved           = lifecycle.StateApproved
	instantiated       = lifecycle.StateInstantiated
	instantiateStopped = lifecycle.StateInstantiateStopped
	terminated         = lifecycle.StateTerminated
	terminateStopped   = lifecycle.StateTerminateStopped
	updated            = lifecycle.StateUpdated
	applied            = lifecycle.StateApplied
	migrated           = lifecycle.StateMigrated
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

// DIG is the lifecycle of a deployment intent group, EMCO's: Created → Approved →
// Instantiated ⇄ Terminated, with the stopped variants. Updated is recorded for a
// context an update or rollback replaced, in the same write as the new revision's
// Instantiated, so it is never current; approve accepts it, as EMCO's does.
//
// A migrate starts on the target (MigrateInto), which records Instantiated at once as an
// instantiate does, and it may start only while the origin allows Migrate. The origin's
// Migrated is recorded when the migrate has moved everything, so that a migrate that
// fails, and is rolled back, leaves the origin as it was; the rolled-back target records
// Approved again (EMCO records Updated for the origin, which temco keeps for replaced
// revisions, and cannot undo a failed migrate). A migrated DIG has nothing on clusters:
// it may be approved and instantiated again, or deleted.
var DIG = &Machine{
	Kind:   "deployment intent group",
	States: []string{created, approved, instantiated, instantiateStopped, terminated, terminateStopped, updated, migrated},
	Ops:    []string{Approve, Instantiate, Terminate, Update, Rollback, Migrate, MigrateInto, Modify, Delete},
	Rules: []Rule{
		{Op: Approve, From: []string{created, terminated, updated, migrated}, To: approved},
		{Op: Approve, From: []string{approved}}, // approving twice is harmless
		{Op: Instantiate, From: []string{approved, terminated}, To: instantiated, Stopped: instantiateStopped},
		{Op: Terminate, From: []string{instantiated, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
		{Op: Update, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
		{Op: Rollback, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
		{Op: Migrate, From: []string{instantiated, instantiateStopped}, To: migrated},
		{Op: MigrateInto, From: []string{approved}, To: instantiated, Stopped: instantiateStopped},
		// Changing an approved DIG or its intents withdraws the approval; an instantiated
		// one takes the change through update.
		{Op: Modify, From: []string{approved}, To: created},
		{Op: Modify}, // any other state: the change alone
		// Nothing of it may be left on clusters.
		{Op: Delete, From: []string{created, approved, migrated}},
		{Op: Delete, From: []string{terminated}, Unless: Terminate},
	},
}

// LogicalCloud is the lifecycle of a logical cloud (dcm): a DIG's without approval or
// rollback; DIGs instantiate into it only while it is instantiated.
var LogicalCloud = &Machine{
	Kind:   "logical cloud",
	States: []string{created, instantiated, instantiateStopped, terminated, terminateStopped, updated},
	Ops:    []string{Instantiate, Terminate, Update, Delete, Host},
	Rules: []Rule{
		{Op: Instantiate, From: []string{created, terminated}, To: instantiated, Stopped: instantiateStopped},
		{Op: Terminate, From: []string{instantiated, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
		{Op: Update, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
		{Op: Delete, From: []string{created}},
		{Op: Delete, From: []string{terminated}, Unless: Terminate},
		{Op: Host, From: []string{instantiated}},
	},
}

// ClusterNetwork is the lifecycle of a cluster's network intents (ncm), EMCO's: apply
// from Created or Terminated records Applied, terminate records Terminated, each with its
// stopped variant. As in EMCO, applying what is applied and terminating what is
// terminated change nothing; unlike EMCO, an apply that was stopped must be terminated
// before it is applied again (EMCO answers success and does nothing). Networks are
// changed (Modify) only while nothing of them is on the cluster.
var ClusterNetwork = &Machine{
	Kind:    "cluster's network intents",
	States:  []string{created, applied, instantiateStopped, terminated, terminateStopped},
	Initial: created,
	Ops:     []string{Instantiate, Terminate, Modify, Delete},
	Rules: []Rule{
		{Op: Instantiate, From: []string{created, terminated}, To: applied, Stopped: instantiateStopped},
		{Op: Instantiate, From: []string{applied}},
		{Op: Terminate, From: []string{applied, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
		{Op: Terminate, From: []string{terminated}},
		{Op: Modify, From: []string{created, terminated}}, // a running terminate uses its own context
		{Op: Delete, From: []string{created}},
		{Op: Delete, From: []string{terminated}, Unless: Terminate},
	},
}

// CACert is the lifecycle of each of a CA certificate intent's enrolment and distribution
// (EMCO's ca-certs): a logical cloud's. Modify is a change of the certificate intent
// itself, allowed while neither has anything on clusters (EMCO allows it only before the
// first instantiate).
var CACert = &Machine{
	Kind:    "CA certificate intent's lifecycle",
	States:  []string{created, instantiated, instantiateStopped, terminated, terminateStopped, updated},
	Initial: created,
	Ops:     []string{Instantiate, Terminate, Update, Modify, Delete},
	Rules: []Rule{
		{Op: Instantiate, From: []string{created, terminated}, To: instantiated, Stopped: instantiateStopped},
		{Op: Terminate, From: []string{instantiated, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
		{Op: Update, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
		{Op: Modify, From: []string{created}},
		{Op: Modify, From: []string{terminated}, Unless: Terminate},
		{Op: Delete, From: []string{created}},
		{Op: Delete, From: []string{terminated}, Unless: Terminate},
	},
}

// For is the machine of t: a DIG's, a logical cloud's, a cluster's network intents' or a
// CA certificate intent's enrolment's or distribution's.
func For(t lifecycle.Target) *Machine {
	switch {
	case t.IsLogicalCloud():
		return LogicalCloud
	case t.IsClusterNetwork():
		return ClusterNetwork
	case t.IsCACert():
		return CACert
	}
	return DIG
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
	if !slices.Contains(m.Ops, op) {
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
var runningStatus = map[string]string{Terminate: lifecycle.StatusTerminating}

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
	lifecycle.StatusInstantiateStopped: Instantiate,
	lifecycle.StatusUpdateStopped:      Update,
	lifecycle.StatusTerminateStopped:   Terminate,
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

// NewHistory is the stored state history of a new target: Created, now.
func (m *Machine) NewHistory() string {
	return Encode(lifecycle.StateInfo{Actions: []lifecycle.Action{{State: created, TimeStamp: time.Now().UTC()}}})
}

// Refused is the error for an operation the target's state does not allow (the api
// answers 409; activities fail with lifecycle.ErrInvalidState).
type Refused struct {
	Target, Op, State string
	Needs             []string // the states Op may start from
	Running           string   // the operation still running that refuses Op, if that is why
}

func (e *Refused) Error() string {
	switch {
	case e.Running != "":
		return fmt.Sprintf("%s is still %s; %s it once the %s completed", e.Target, strings.ToLower(runningStatus[e.Running]), e.Op, e.Running)
	case e.Op == Delete:
		return fmt.Sprintf("%s is %s: terminate it before deleting it", e.Target, e.State)
	}
	return fmt.Sprintf("%s is %s: %s needs one of %v", e.Target, e.State, e.Op, e.Needs)
}
