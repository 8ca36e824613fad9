package lifecycle

// Activity names: each is the name of the method that implements it. A block's heading
// names the package whose register.go registers it (and lists it in ActivityNames) and
// the struct the method is on; workers/register_test.go holds them to it.
const (
	// activities/operation (operation.Activities): an operation's record and its context's
	// header, a rollback's copy of a revision, a rollout's record and windows.
	ActivityBeginOperation  = "BeginOperation"
	ActivityFinishOperation = "FinishOperation"
	ActivityCopyContext     = "CopyContext"
	ActivityRecordRollout   = "RecordRollout"
	ActivityRolloutWindow   = "RolloutWindow"
	// activities/operation (operation.Activities, migrate.go): a migrate's record, on the
	// origin (its hold) and on the target.
	ActivityBeginHold     = "BeginHold"
	ActivityBeginMigrate  = "BeginMigrate"
	ActivityFinishMigrate = "FinishMigrate"
	// activities/operation (operation.Holds): the hold of a migrate's origin DIG.
	ActivityHoldDIG     = "HoldDIG"
	ActivityAwaitHolder = "AwaitHolder"

	// activities/artifact (artifact.Activities): the pipeline of charts that come by
	// reference: each pinned to a digest, then fetched, verified and stored; and the
	// images of a context's objects pinned to their digests (pin.go).
	ActivityResolveArtifacts = "ResolveArtifacts"
	ActivityFetchArtifact    = "FetchArtifact"
	ActivityPinImages        = "PinImages"

	// activities/render (render.Activities): the rendering of a context's charts, and again
	// per set of cluster capabilities (variants.go).
	ActivityRenderApps     = "RenderApps"
	ActivityRenderVariants = "RenderVariants"

	// activities/placement (placement.Activities): placement, and the commit of the
	// controllers' edits.
	ActivityPlaceApps         = "PlaceApps"
	ActivityCommitControllers = "CommitControllers"

	// activities/actions (actions.Activities): a built-in intent controller's step, and the
	// controllers of a context.
	ActivityRunController      = "RunController" // contract.ActivityName
	ActivityContextControllers = "ContextControllers"

	// activities/cluster (cluster.Activities): a context's batches of clusters, and per
	// cluster the apply, delete, read and prune; and the same per group of clusters (one
	// activity works on a batch's clusters together: see cluster/group.go).
	ActivityContextBatches = "ContextBatches"
	ActivityListBatch      = "ListBatch"
	ActivityCountBatch     = "CountBatch"
	ActivityApplyCluster   = "ApplyCluster"
	ActivityDeleteCluster  = "DeleteCluster"
	ActivityReadCluster    = "ReadCluster"
	ActivityPruneCluster   = "PruneCluster"
	ActivityApplyGroup     = "ApplyGroup"
	ActivityDeleteGroup    = "DeleteGroup"
	ActivityReadGroup      = "ReadGroup"
	ActivityPruneGroup     = "PruneGroup"

	// activities/logicalcloud (logicalcloud.Activities): a logical cloud's preparation, and
	// its objects' set-up, tear-down and prune on each cluster.
	ActivityPrepareLogicalCloud  = "PrepareLogicalCloud"
	ActivitySetUpLogicalCloud    = "SetUpLogicalCloud"
	ActivityTearDownLogicalCloud = "TearDownLogicalCloud"
	ActivityPruneLogicalCloud    = "PruneLogicalCloud"

	// activities/drift (drift.Activities): a drift check's plan and record, and per batch
	// its clusters and per cluster the drift detection (detect.go).
	ActivityPlanDriftCheck   = "PlanDriftCheck"
	ActivityRecordDriftCheck = "RecordDriftCheck"
	ActivityDriftBatch       = "DriftBatchClusters"
	ActivityDetectDrift      = "DetectDrift"
	ActivityDetectDriftGroup = "DetectDriftGroup"

	// activities/preview (preview.Activities): a rollout preview's steps (see preview.go).
	ActivityBeginPreview       = "BeginPreview"
	ActivityPreviewControllers = "PreviewControllers"
	ActivityDiffPreview        = "DiffPreview"
	ActivityDeletePreview      = "DeletePreview"

	// activities/relocate (relocate.Activities): the Relocate workflow's steps (see
	// relocate.go).
	ActivityPlanRelocation = "PlanRelocation"
	ActivityPlaceApp       = "PlaceApp"
	ActivityUpdateDIG      = "UpdateDIG"
	ActivityAwaitAppReady  = "AwaitAppReady"

	// activities/placement (placement.Activities, capacity.go): the autoscaler's view of
	// its DIG and capacity placement, and the record of its state there.
	ActivityObserveCapacity = "ObserveCapacity"
	ActivityRecordCapacity  = "RecordCapacity"
	// activities/autoscale (autoscale.Activities): a cluster's signals, and the drain of
	// its HPAs.
	ActivityCapacitySignals = "CapacitySignals"
	ActivityDrainCapacity   = "DrainCapacity"

	// activities/inventory (inventory.Activities): one sync of a cluster inventory.
	ActivitySyncInventory = "SyncInventory"

	// activities/health (health.Activities): a page of clusters probed, and the end of a
	// round of probes recorded.
	ActivityProbeClusters = "ProbeClusters"
	ActivityRecordRound   = "RecordProbeRound"

	// activities/policy (policy.Activities): an agent's event stream, a policy intent's
	// evaluation, the workflow a decision starts, and the decision's record.
	ActivityListenPolicyAgent = "ListenPolicyAgent"
	ActivityEvaluatePolicy    = "EvaluatePolicy"
	ActivityPolicyAction      = "PolicyAction"
	ActivityRecordPolicy      = "RecordPolicy"

	// controllers/ncm (ncm.Activities): a cluster network's preparation.
	ActivityPrepareClusterNetwork = "PrepareClusterNetwork"

	// controllers/cacerts (cacerts.Activities): enrolment signs a key per member cluster on
	// the issuing cluster (enroll.go); distribution puts the issued certificates and their
	// keys on the member clusters (distribute.go).
	ActivityPrepareCertEnrollment   = "PrepareCertEnrollment"
	ActivityEnrollCertificates      = "EnrollCertificates"
	ActivityWithdrawCertificates    = "WithdrawCertificates"
	ActivityPruneCertificates       = "PruneCertificates"
	ActivityPrepareCertDistribution = "PrepareCertDistribution"
	ActivityDistributeCertificates  = "DistributeCertificates"
)
