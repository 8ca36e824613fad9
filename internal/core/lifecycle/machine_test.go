package lifecycle

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// The machines and operations, short for the tables.
var (
	DIG, LogicalCloud, ClusterNetwork, CACert = DIGs.Machine, LogicalClouds.Machine, ClusterNetworks.Machine, CACerts.Machine
)

const (
	Instantiate, Terminate, Update, Rollback, Migrate = OpInstantiate, OpTerminate, OpUpdate, OpRollback, OpMigrate
	MigrateInto, Approve, Modify, Delete, Host        = OpMigrateInto, OpApprove, OpModify, OpDelete, OpHost
)

// What a cell of the expected tables says: refused, starts and records no state, starts
// and records none once a running terminate ended, or the state it records.
const (
	no    = "refused"
	keep  = "records no state"
	after = "records no state, once a running terminate ended"
)

// The columns of the expected tables: every state, none (an empty history) and one no
// machine knows (Created, Approved, Instantiated, InstantiateStopped, Terminated,
// TerminateStopped, Updated, Migrated, none, Bogus).
var columns = []string{created, approved, instantiated, instantiateStopped, terminated, terminateStopped, updated, migrated, "", "Bogus"}

// Written out by hand from EMCO's rules as temco implements them, not from the tables.
var wantDIG = map[string][]string{
	Approve:     {approved, keep, no, no, approved, no, approved, approved, no, no},
	Instantiate: {no, instantiated, no, no, instantiated, no, no, no, no, no},
	Terminate:   {no, no, terminated, terminated, no, terminated, no, no, no, no},
	Update:      {no, no, instantiated, no, no, no, no, no, no, no},
	Rollback:    {no, no, instantiated, no, no, no, no, no, no, no},
	Migrate:     {no, no, migrated, migrated, no, no, no, no, no, no},
	MigrateInto: {no, instantiated, no, no, no, no, no, no, no, no},
	Modify:      {keep, created, keep, keep, keep, keep, keep, keep, keep, keep},
	Delete:      {keep, keep, no, no, after, no, no, keep, no, no},
}

var wantCloud = map[string][]string{
	Instantiate: {instantiated, no, no, no, instantiated, no, no, no, no, no},
	Terminate:   {no, no, terminated, terminated, no, terminated, no, no, no, no},
	Update:      {no, no, instantiated, no, no, no, no, no, no, no},
	Delete:      {keep, no, no, no, after, no, no, no, no, no},
	Host:        {no, no, keep, no, no, no, no, no, no, no},
}

// The states each operation's refusal lists, in the order of the messages callers
// have always given.
var wantNeeds = map[*Machine]map[string][]string{
	DIG: {
		Approve:     {created, terminated, updated, migrated},
		Instantiate: {approved, terminated},
		Terminate:   {instantiated, instantiateStopped, terminateStopped},
		Update:      {instantiated},
		Rollback:    {instantiated},
		Migrate:     {instantiated, instantiateStopped},
		MigrateInto: {approved},
		Delete:      {created, approved, migrated, terminated},
	},
	LogicalCloud: {
		Instantiate: {created, terminated},
		Terminate:   {instantiated, instantiateStopped, terminateStopped},
		Update:      {instantiated},
		Delete:      {created, terminated},
		Host:        {instantiated},
	},
}

// What a running operation records beside To: the replaced context's state and the
// state a stop records.
var wantRunning = map[string]struct{ replaced, stopped string }{
	Instantiate: {"", instantiateStopped},
	Terminate:   {"", terminateStopped},
	Update:      {updated, instantiateStopped},
	Rollback:    {updated, instantiateStopped},
	Migrate:     {"", ""}, // recorded at the end, once the objects have moved
	MigrateInto: {"", instantiateStopped},
}

func TestEveryOperationFromEveryState(t *testing.T) {
	for _, m := range []*Machine{DIG, LogicalCloud} {
		want := wantDIG
		if m == LogicalCloud {
			want = wantCloud
		}
		if got := slices.Sorted(maps.Keys(want)); !slices.Equal(got, slices.Sorted(slices.Values(m.Ops))) {
			t.Fatalf("%s: operations %v, the expected table has %v", m.Kind, m.Ops, got)
		}
		for _, op := range m.Ops {
			for i, state := range columns {
				name := fmt.Sprintf("%s/%s from %q", m.Kind, op, state)
				tr, err := m.Start("T", op, state)
				if m.Allows(op, state) != (err == nil) {
					t.Errorf("%s: Allows disagrees with Start (%v)", name, err)
				}
				switch w := want[op][i]; w {
				case no:
					var r *Refused
					if !errors.As(err, &r) || r.Op != op || r.State != state || !slices.Equal(r.Needs, wantNeeds[m][op]) {
						t.Errorf("%s: %+v, %v; want refused, needing %v", name, tr, err, wantNeeds[m][op])
					}
				case keep, after:
					if err != nil || tr.To != "" || tr.Replaced != "" || tr.Stopped != "" || (tr.Unless == Terminate) != (w == after) {
						t.Errorf("%s: %+v, %v; want it to start and %s", name, tr, err, w)
					}
				default:
					r := wantRunning[op]
					if err != nil || tr.To != w || tr.Replaced != r.replaced || tr.Stopped != r.stopped || tr.Unless != "" {
						t.Errorf("%s: %+v, %v; want it to record %s (replaced %q, stopped %q)", name, tr, err, w, r.replaced, r.stopped)
					}
				}
				if err == nil && (tr.Target != "T" || tr.Op != op || tr.From != state) {
					t.Errorf("%s: transition %+v does not say what it is", name, tr)
				}
			}
		}
	}
}

// The refusals read as the api and the activities have always worded them (tests/e2e
// and EMCO users read them).
func TestRefusalsNameTheStateAndWhatTheOperationNeeds(t *testing.T) {
	dig := Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	cloud := Target{Project: "p", LogicalCloud: "lc"}
	for _, c := range []struct {
		m                *Machine
		target, op, from string
		want             string
	}{
		{DIG, dig.String(), Approve, instantiated,
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Instantiated: approve needs one of [Created Terminated Updated Migrated]`},
		{DIG, dig.String(), Migrate, terminated,
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Terminated: migrate needs one of [Instantiated InstantiateStopped]`},
		{DIG, dig.String(), MigrateInto, created,
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Created: migrate into needs one of [Approved]`},
		{DIG, dig.String(), Instantiate, created,
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Created: instantiate needs one of [Approved Terminated]`},
		{DIG, dig.String(), Terminate, approved,
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Approved: terminate needs one of [Instantiated InstantiateStopped TerminateStopped]`},
		{DIG, dig.String(), Update, terminated,
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Terminated: update needs one of [Instantiated]`},
		{DIG, dig.String(), Rollback, instantiateStopped,
			`deployment intent group "d" (project "p", composite app "ca" "v1") is InstantiateStopped: rollback needs one of [Instantiated]`},
		{DIG, `deployment intent group "d"`, Delete, instantiated, `deployment intent group "d" is Instantiated: terminate it before deleting it`},
		{LogicalCloud, cloud.String(), Instantiate, instantiated,
			`logical cloud "lc" (project "p") is Instantiated: instantiate needs one of [Created Terminated]`},
		{LogicalCloud, `logical cloud "lc"`, Delete, terminateStopped, `logical cloud "lc" is TerminateStopped: terminate it before deleting it`},
	} {
		if _, err := c.m.Start(c.target, c.op, c.from); err == nil || err.Error() != c.want {
			t.Errorf("%s from %s: %v\nwant %s", c.op, c.from, err, c.want)
		}
	}
}

// A delete from Terminated waits for that terminate: refused while its context is
// Terminating, whatever else it says.
func TestDeleteWaitsForTheTerminate(t *testing.T) {
	for _, m := range []*Machine{DIG, LogicalCloud} {
		tr, err := m.Start(`logical cloud "lc"`, Delete, terminated)
		if err != nil {
			t.Fatal(err)
		}
		err = tr.Settle(StatusTerminating)
		if want := `logical cloud "lc" is still terminating; delete it once the terminate completed`; err == nil || err.Error() != want {
			t.Errorf("%s: delete while terminating: %v, want %s", m.Kind, err, want)
		}
		for _, status := range []string{StatusTerminated, StatusTerminateFailed, StatusTerminateStopped, ""} {
			if err := tr.Settle(status); err != nil {
				t.Errorf("%s: delete once the context is %q: %v", m.Kind, status, err)
			}
		}
		tr, _ = m.Start("x", Delete, created)
		if err := tr.Settle(StatusTerminating); err != nil {
			t.Errorf("%s: a delete from Created waits for nothing: %v", m.Kind, err)
		}
	}
}

// The same instantiate or terminate asked again for a transition it recorded and never
// ended resumes; anything else stays refused.
func TestResumesOnlyAnUnendedTransitionOfTheSameOperation(t *testing.T) {
	for _, m := range []*Machine{DIG, LogicalCloud} {
		for _, c := range []struct {
			op, state, status string
			want              bool
		}{
			{Terminate, terminated, StatusTerminating, true},
			{Instantiate, instantiated, StatusInstantiating, true},
			{Terminate, terminated, StatusTerminated, false},
			{Terminate, terminated, StatusTerminateFailed, false},
			{Terminate, terminated, "", false},
			{Instantiate, instantiated, StatusInstantiated, false},
			{Instantiate, instantiated, StatusUpdating, false},    // an update's context
			{Instantiate, terminated, StatusTerminating, false},   // another operation's
			{Terminate, instantiated, StatusInstantiating, false}, // another operation's
			{Update, instantiated, StatusUpdating, false},         // not resumed: a new revision goes
		} {
			if got := m.Resumes(c.op, c.state, c.status); got != c.want {
				t.Errorf("%s: %s in %s with its context %q resumes: %v, want %v", m.Kind, c.op, c.state, c.status, got, c.want)
			}
		}
	}
}

// Operations a machine does not have are errors, not refusals by state.
func TestUnknownOperations(t *testing.T) {
	for _, c := range []struct {
		m  *Machine
		op string
	}{{DIG, Host}, {DIG, OpStop}, {LogicalCloud, Approve}, {LogicalCloud, Rollback}, {LogicalCloud, Modify}, {LogicalCloud, OpStop}} {
		_, err := c.m.Start("T", c.op, created)
		var r *Refused
		if err == nil || errors.As(err, &r) {
			t.Errorf("%s %s: %v, want an unknown operation", c.m.Kind, c.op, err)
		}
	}
}

// A stop records the stopped variant of the operation it ended, told by the status
// the operation's context ended in.
func TestStoppedState(t *testing.T) {
	for _, m := range []*Machine{DIG, LogicalCloud} {
		for status, want := range map[string]string{
			StatusInstantiateStopped: instantiateStopped,
			StatusUpdateStopped:      instantiateStopped, // terminate is the way on
			StatusTerminateStopped:   terminateStopped,
			// stopped, then cancelled: the failed status
			StatusInstantiateFailed: instantiateStopped,
			StatusUpdateFailed:      instantiateStopped,
			StatusTerminateFailed:   instantiateStopped,
		} {
			if got := m.StoppedState(status); got != want {
				t.Errorf("%s: stopped with status %s records %s, want %s", m.Kind, status, got, want)
			}
		}
	}
}

// The tables name only their machine's states and operations, and every state an
// operation records is one of them.
func TestTablesAreClosed(t *testing.T) {
	for _, m := range []*Machine{DIG, LogicalCloud, ClusterNetwork, CACert} {
		for _, r := range m.Rules {
			if !slices.Contains(m.Ops, r.Op) {
				t.Errorf("%s: rule for unknown operation %s", m.Kind, r.Op)
			}
			for _, s := range append(slices.Clone(r.From), r.To, r.Replaced, r.Stopped) {
				if s != "" && !slices.Contains(m.States, s) {
					t.Errorf("%s: %s names state %s, which is not one of %v", m.Kind, r.Op, s, m.States)
				}
			}
		}
	}
}

// A cluster's network intents, EMCO's ncm: its own columns (Applied; an empty history is
// Created, as clusters have none until their first apply).
func TestClusterNetworkFromEveryState(t *testing.T) {
	m := ClusterNetwork
	cols := []string{created, applied, instantiateStopped, terminated, terminateStopped, "", instantiated, "Bogus"}
	want := map[string][]string{
		Instantiate: {applied, keep, no, applied, no, applied, no, no},
		Terminate:   {no, terminated, terminated, keep, terminated, no, no, no},
		Modify:      {keep, no, no, keep, no, keep, no, no},
		Delete:      {keep, no, no, after, no, keep, no, no},
	}
	needs := map[string][]string{
		Instantiate: {created, terminated},
		Terminate:   {applied, instantiateStopped, terminateStopped},
		Modify:      {created, terminated},
		Delete:      {created, terminated},
	}
	if got := slices.Sorted(maps.Keys(want)); !slices.Equal(got, slices.Sorted(slices.Values(m.Ops))) {
		t.Fatalf("operations %v, the expected table has %v", m.Ops, got)
	}
	for _, op := range m.Ops {
		for i, state := range cols {
			name := fmt.Sprintf("%s from %q", op, state)
			tr, err := m.Start("T", op, state)
			switch w := want[op][i]; w {
			case no:
				var r *Refused
				if !errors.As(err, &r) || !slices.Equal(r.Needs, needs[op]) {
					t.Errorf("%s: %+v, %v; want refused, needing %v", name, tr, err, needs[op])
				}
			case keep, after:
				if err != nil || tr.To != "" || tr.Stopped != "" || (tr.Unless == Terminate) != (w == after) {
					t.Errorf("%s: %+v, %v; want it to start and %s", name, tr, err, w)
				}
			default:
				r := wantRunning[op]
				if err != nil || tr.To != w || tr.Stopped != r.stopped || tr.Unless != "" {
					t.Errorf("%s: %+v, %v; want it to record %s (stopped %q)", name, tr, err, w, r.stopped)
				}
			}
		}
	}
	for status, want := range map[string]string{StatusInstantiateStopped: instantiateStopped, StatusTerminateStopped: terminateStopped} {
		if got := m.StoppedState(status); got != want {
			t.Errorf("stopped with status %s records %s, want %s", status, got, want)
		}
	}
	cluster := Target{ClusterNetwork: "p+c"}
	if _, err := m.Start(cluster.String(), Modify, applied); err == nil || err.Error() !=
		`network intents of cluster "c" (provider "p") is Applied: modify needs one of [Created Terminated]` {
		t.Errorf("modify while applied: %v", err)
	}
	if cluster.Kind() != ClusterNetworks || cluster.ID() != "/cluster-providers/p/clusters/c" || cluster.WorkflowID() != "cluster-network/p/c" {
		t.Errorf("target %+v: machine %s, id %s, workflow %s", cluster, cluster.Kind().Name, cluster.ID(), cluster.WorkflowID())
	}
}

// A CA certificate intent's enrolment and distribution each have a logical cloud's
// lifecycle, kept in a child of the intent, with a workflow per intent and stage.
func TestCACertTargets(t *testing.T) {
	cp := Target{ClusterProvider: "local", CACert: "edge", CertStage: CertEnrollment}
	pr := Target{Project: "p1", CACert: "edge", CertStage: CertDistribution}
	for _, c := range []struct {
		t            Target
		id, wf, name string
	}{
		{cp, "/cluster-providers/local/ca-certs/edge/enrollment", "ca-cert/cluster-provider/local/edge/enrollment",
			`enrollment of CA certificate intent "edge" (cluster provider "local")`},
		{pr, "/projects/p1/ca-certs/edge/distribution", "ca-cert/project/p1/edge/distribution",
			`distribution of CA certificate intent "edge" (project "p1")`},
	} {
		if c.t.Kind() != CACerts || c.t.ID() != c.id || c.t.WorkflowID() != c.wf || c.t.String() != c.name {
			t.Errorf("%+v: machine %s, id %s, workflow %s, name %s", c.t, c.t.Kind().Name, c.t.ID(), c.t.WorkflowID(), c.t.String())
		}
	}
	if got := cp.Stage(CertDistribution).ID(); got != "/cluster-providers/local/ca-certs/edge/distribution" {
		t.Errorf("the distribution of %s is %s", cp, got)
	}
	for state, ok := range map[string]bool{created: true, "": true, terminated: true, instantiated: false, instantiateStopped: false} {
		if CACert.Allows(Modify, state) != ok {
			t.Errorf("modify from %q: allowed %v, want %v", state, !ok, ok)
		}
	}
}
