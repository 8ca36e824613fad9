package lifecycle

// Migrate (EMCO's POST DIG/migrate) moves a running deployment from one DIG (the origin)
// to another DIG of the same composite app, at another version (the target). The
// target's lifecycle workflow runs it as its operation; the origin's lifecycle workflow is
// held for as long as that operation's workflow runs, so neither DIG runs anything else
// meanwhile.
const (
	OpMigrate = "migrate"

	// StateMigrated is recorded for the origin's context once a migrate has moved its
	// objects to the target: nothing of the origin is left on clusters.
	StateMigrated = "Migrated"

	WorkflowMigrate = "Migrate"

	// UpdateMigrate asks the target's lifecycle workflow to run a migrate; UpdateHold asks
	// the origin's to hold still while it runs. SignalRelease (the holder's workflow id)
	// lets the origin go when the migrate could not start after all.
	UpdateMigrate = "migrate"
	UpdateHold    = "hold"
	SignalRelease = "release"
)

// MigrateRequest asks a target DIG's lifecycle workflow to take over the running
// deployment of Origin.
type MigrateRequest struct {
	Origin    Target `json:"origin"`
	ContextID string `json:"contextId"` // the target's new context, chosen by the caller
	Requested string `json:"requested"` // RFC 3339 time of the API request
}

// HoldRequest asks a DIG's lifecycle workflow to run nothing while the workflow Holder
// (the migrate of HolderDIG) runs.
type HoldRequest struct {
	Holder    string `json:"holder"`
	HolderDIG Target `json:"holderDig"`
}

// MigrateBegin records the start of a migrate: the target's new context, built from
// the target DIG for the instance of the origin's running context OriginContext.
type MigrateBegin struct {
	DIG           Target `json:"dig"`
	ContextID     string `json:"contextId"`
	Origin        Target `json:"origin"`
	OriginContext string `json:"originContext"`
}

// MigrateInput starts a migrate workflow: OpInput's DIG is the target, ContextID its new
// context and Previous the origin's running context.
type MigrateInput struct {
	OpInput
	Origin Target `json:"origin"`
}

// How a migrate ended, as FinishMigrate records it.
const (
	// MigrateDone: the target is Instantiated with the objects, the origin Migrated.
	MigrateDone = "migrated"
	// MigrateRolledBack: the origin's context was applied again and what only the target
	// had was deleted; the target is Approved again, its context failed, the origin
	// unchanged.
	MigrateRolledBack = "rolled back"
	// MigrateStopped: a stop ended the rollback itself; the target is InstantiateStopped.
	MigrateStopped = "stopped"
)

// MigrateFinish records how a migrate ended.
type MigrateFinish struct {
	MigrateBegin
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Hooks are the workflows the migrate ran for its controllers (tac's hooks).
	Hooks []HookRun `json:"hooks,omitempty"`
}

// HoldInput asks DIG's lifecycle workflow to hold still (HoldRequest).
type HoldInput struct {
	DIG Target `json:"dig"`
	HoldRequest
}
