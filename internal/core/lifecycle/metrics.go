package lifecycle

// The metrics the operations' workflows record through the Temporal SDK's metrics handler
// (workflow.GetMetricsHandler): the SDK drops them while a history is replayed, so each
// ended operation counts once, and they add no command to its history. The worker's
// handler (internal/adapters/metrics) exports them under these names.
const (
	// MetricOperations counts ended operations by kind, operation and outcome.
	MetricOperations = "temco_operations_total"
	// MetricOperationDuration times ended operations from their workflow's start, by kind,
	// operation and outcome.
	MetricOperationDuration = "temco_operation_duration_seconds"
)

// The outcomes of an ended operation, the label of its metrics.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeStopped   = "stopped"
	OutcomeCancelled = "cancelled"
	// OutcomeRolledBack: a migrate that failed or was stopped and returned the origin.
	OutcomeRolledBack = "rolled_back"
)
