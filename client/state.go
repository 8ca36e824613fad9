package client

import (
	"context"
	"net/http"
	"time"
)

// DIGState is a DIG's state, as GET DIG/state answers it: its lifecycle state and
// history, its deployment (the current revision's context) and the operation running
// on it, its rollout, and counts of its objects and clusters. The dashboard shows the
// same, computed by the same code, with a page of its clusters.
type DIGState struct {
	Project             string `json:"project"`
	CompositeApp        string `json:"compositeApp"`
	CompositeAppVersion string `json:"compositeAppVersion"`
	Name                string `json:"name"`
	// State is the DIG's lifecycle state: Created, Approved, Instantiated,
	// InstantiateStopped, Terminated, TerminateStopped or Migrated.
	State     string        `json:"state"`
	History   []StateAction `json:"history"`   // oldest first
	Revisions []Revision    `json:"revisions"` // newest first, each with its latest state
	// The deployment: the current revision, its context and how far its last operation
	// got (Instantiating, Instantiated, InstantiateFailed, Updating, ...), and why that
	// failed. All empty before the first instantiate.
	Revision      int64  `json:"revision,omitempty"`
	ContextID     string `json:"contextId,omitempty"`
	ContextStatus string `json:"contextStatus,omitempty"`
	Error         string `json:"error,omitempty"`
	// Operation is the operation running on the context; nil when none does.
	Operation *Operation `json:"operation,omitempty"`
	// Rollout is where the context's staged rollout stands (a DIG with a rollout strategy).
	Rollout *Rollout `json:"rollout,omitempty"`
	Apps    []string `json:"apps"` // the context's apps, by name
	// Objects counts the context's objects by state (Pending, Applied, Failed, Retrying,
	// Deleted); Clusters is how many clusters it is placed on.
	Objects  map[string]int `json:"objects"`
	Clusters int            `json:"clusters"`
	// ClusterStates counts the clusters by state (the worst of their apps'), and
	// AppClusterStates each app's clusters by that app's state there: only when asked
	// for (DIGStateOptions.Clusters), since that reads every cluster's record.
	ClusterStates    map[string]int            `json:"clusterStates,omitempty"`
	AppClusterStates map[string]map[string]int `json:"appClusterStates,omitempty"`
}

// StateAction is one entry of a DIG's state history.
type StateAction struct {
	State     string    `json:"state"`
	ContextID string    `json:"contextId,omitempty"`
	Revision  int64     `json:"revision,omitempty"`
	Time      time.Time `json:"time"`
}

// Revision is one revision of a DIG.
type Revision struct {
	Revision  int64     `json:"revision"`
	ContextID string    `json:"contextId"`
	State     string    `json:"state"` // the latest recorded for it
	Time      time.Time `json:"time"`
}

// Operation is an operation under way: its workflow and, where its workflow answered,
// how far it got.
type Operation struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId,omitempty"`
	// Op is the operation (instantiate, update, ...) and Phase its step, as the workflow
	// says: empty when it did not answer (ProgressError says why).
	Op            string `json:"op,omitempty"`
	Phase         string `json:"phase,omitempty"`
	ClustersDone  int    `json:"clustersDone,omitempty"`
	ClustersTotal int    `json:"clustersTotal,omitempty"`
	BatchesDone   int    `json:"batchesDone,omitempty"`
	BatchesTotal  int    `json:"batchesTotal,omitempty"`
	Stopped       bool   `json:"stopped,omitempty"`
	ProgressError string `json:"progressError,omitempty"`
}

// Rollout is where a staged rollout stands.
type Rollout struct {
	Strategy string `json:"strategy"`
	// State is Running, Paused, AwaitingDecision, RollingBack, Succeeded, Failed or
	// RolledBack.
	State  string         `json:"state"`
	Cause  string         `json:"cause,omitempty"` // why it failed
	Stages []RolloutStage `json:"stages"`
}

// RolloutStage is one stage of a rollout: its name and state (Pending,
// WaitingForWindow, WaitingForApproval, Waiting, Applying, Verifying, Baking,
// Succeeded, Failed, RolledBack or Skipped).
type RolloutStage struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// Stage says where the rollout is: its first stage under way ("name: state"), else,
// every stage done or yet to start, the rollout's state.
func (r *Rollout) Stage() string {
	if r == nil {
		return ""
	}
	for _, st := range r.Stages {
		switch st.State {
		case "Succeeded", "Skipped", "Pending":
		default:
			return st.Name + ": " + st.State
		}
	}
	return r.State
}

// Running reports whether an operation of the DIG is under way.
func (s DIGState) Running() bool { return running(s.Operation, s.ContextStatus) }

// Failed reports whether the DIG's last operation failed.
func (s DIGState) Failed() bool { return failed(s.ContextStatus) }

// DIGStateOptions are what DIGState reads beyond the state.
type DIGStateOptions struct {
	// Clusters counts the clusters by state, all and by app (DIGState.ClusterStates and
	// AppClusterStates): that reads every cluster's record, so it is for a look at the
	// outcome, not for each poll of a running operation.
	Clusters bool
}

// DIGState reads the state of the DIG at path
// (/projects/P/composite-apps/CA/VERSION/deployment-intent-groups/DIG).
func (c *Client) DIGState(ctx context.Context, dig string, opts DIGStateOptions) (DIGState, error) {
	path := dig + "/state"
	if opts.Clusters {
		path += "?clusters=true"
	}
	var s DIGState
	err := c.Do(ctx, Request{Method: http.MethodGet, Path: path}, &s)
	return s, err
}
