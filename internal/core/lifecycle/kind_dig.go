package lifecycle

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// DIGs are deployment intent groups. Their lifecycle is EMCO's: Created → Approved →
// Instantiated ⇄ Terminated, with the stopped variants. Updated is recorded for a
// context an update or rollback replaced, in the same write as the new revision's
// Instantiated, so it is never current; approve accepts it, as EMCO's does.
//
// A migrate starts on the target (OpMigrateInto), which records Instantiated at once as
// an instantiate does, and it may start only while the origin allows OpMigrate. The
// origin's Migrated is recorded when the migrate has moved everything, so that a migrate
// that fails, and is rolled back, leaves the origin as it was; the rolled-back target
// records Approved again (EMCO records Updated for the origin, which temco keeps for
// replaced revisions, and cannot undo a failed migrate). A migrated DIG has nothing on
// clusters: it may be approved and instantiated again, or deleted.
//
// A DIG's context is rendered, placed and edited by controllers (no Prepare); it rolls
// out in stages and deploys into its logical cloud.
var DIGs = &Kind{
	Name: "dig",
	Machine: &Machine{
		Kind:   "deployment intent group",
		States: []string{created, approved, instantiated, instantiateStopped, terminated, terminateStopped, updated, migrated},
		Ops:    []string{OpApprove, OpInstantiate, OpTerminate, OpUpdate, OpRollback, OpMigrate, OpMigrateInto, OpModify, OpDelete},
		Rules: []Rule{
			{Op: OpApprove, From: []string{created, terminated, updated, migrated}, To: approved},
			{Op: OpApprove, From: []string{approved}}, // approving twice is harmless
			{Op: OpInstantiate, From: []string{approved, terminated}, To: instantiated, Stopped: instantiateStopped},
			{Op: OpTerminate, From: []string{instantiated, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
			{Op: OpUpdate, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
			{Op: OpRollback, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
			{Op: OpMigrate, From: []string{instantiated, instantiateStopped}, To: migrated},
			{Op: OpMigrateInto, From: []string{approved}, To: instantiated, Stopped: instantiateStopped},
			// Changing an approved DIG or its intents withdraws the approval; an instantiated
			// one takes the change through update.
			{Op: OpModify, From: []string{approved}, To: created},
			{Op: OpModify}, // any other state: the change alone
			// Nothing of it may be left on clusters.
			{Op: OpDelete, From: []string{created, approved, migrated}},
			{Op: OpDelete, From: []string{terminated}, Unless: OpTerminate},
		},
	},
	id: func(d Target) string {
		return fmt.Sprintf("/projects/%s/composite-apps/%s/%s/deployment-intent-groups/%s", d.Project, d.CompositeApp, d.Version, d.DIG)
	},
	workflowID: func(d Target) string {
		return "dig/" + strings.Join([]string{d.Project, d.CompositeApp, d.Version, d.DIG}, "/")
	},
	name: func(d Target) string {
		return fmt.Sprintf("deployment intent group %q (project %q, composite app %q %q)", d.DIG, d.Project, d.CompositeApp, d.Version)
	},
	attrs: func(d Target) []temporal.SearchAttributeUpdate {
		return []temporal.SearchAttributeUpdate{AttrProject.ValueSet(d.Project), AttrCompositeApp.ValueSet(d.CompositeApp),
			AttrVersion.ValueSet(d.Version), AttrDIG.ValueSet(d.DIG)}
	},
	Staged: true,
	Apps:   true,
	Scope:  ScopeHost,
	Status: ByApp,
	// Approve, rollback and migrate are the api's own routes (bodies of their own).
	Routes: []Route{{
		Path: RouteDIG,
		Target: func(p func(string) string) Target {
			return Target{Project: p("project"), CompositeApp: p("compositeApp"), Version: p("version"), DIG: p("deploymentIntentGroup")}
		},
		Endpoints: Endpoints("a DIG"),
	}},
}

// RouteDIG is the REST path of a DIG.
const RouteDIG = "/projects/:project/composite-apps/:compositeApp/:version/deployment-intent-groups/:deploymentIntentGroup"

// DIGOfID is the DIG whose store id (Target.ID) is id, or any id below it; the zero
// Target when id is not one.
func DIGOfID(id string) Target {
	seg := strings.Split(strings.TrimPrefix(id, "/"), "/")
	if len(seg) < 7 || seg[0] != "projects" || seg[2] != "composite-apps" || seg[5] != "deployment-intent-groups" {
		return Target{}
	}
	return Target{Project: seg[1], CompositeApp: seg[3], Version: seg[4], DIG: seg[6]}
}
