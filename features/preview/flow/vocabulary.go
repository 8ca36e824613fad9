package flow

import (
	"cmp"
	"fmt"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Rollout previews (temco's own; EMCO has none): POST DIG/rollout-preview answers, before
// anything runs, what the DIG's next operation would change on each cluster, stage by
// stage. The PreviewRollout workflow builds the operation's context as a scratch context
// (rendered, placed and edited by the controllers as the operation would), compares it
// per cluster with the running one, and deletes it; no state is recorded and no cluster
// is touched.
const (
	WorkflowPreviewRollout = "PreviewRollout"

	OpPreview = "preview" // the operation search attribute of previews, and a scratch context's Op
	// StatusPreview is the status of a scratch context while its preview runs.
	StatusPreview = "Preview"
	// PreviewAllStage names the single stage of a DIG without a rollout strategy, and
	// PreviewRemovedStage the pseudo-stage of the clusters the new placement drops.
	PreviewAllStage     = "all"
	PreviewRemovedStage = "removed clusters"
)

// PreviewInput starts a preview of dig's next operation in the scratch context ContextID
// (chosen by the caller). Revision, if set, previews a rollback to that revision of the
// current instance; Limit bounds the clusters each stage details (its counts are whole).
type PreviewInput struct {
	DIG       lifecycle.Target `json:"dig"`
	ContextID string           `json:"contextId"`
	Revision  int64            `json:"revision,omitempty"`
	Limit     int              `json:"limit"`
}

// PreviewStart is what the preview works out from the DIG's state: the operation, the
// running context it would replace (update, rollback) and the stored revision a rollback
// copies.
type PreviewStart struct {
	Op       string `json:"op"`
	Previous string `json:"previous,omitempty"`
	Source   string `json:"source,omitempty"`
	// Current is the running revision (0 before an instantiate); Revision the one the
	// operation would record.
	Current  int64 `json:"current,omitempty"`
	Revision int64 `json:"revision"`
}

// PreviewChoice is which of the DIG's controllers a preview runs: Run lists them with
// their step (the operation's numbering), Notes say what was left out and why.
type PreviewChoice struct {
	Run   []PreviewStep `json:"run,omitempty"`
	Notes []string      `json:"notes,omitempty"`
}

// PreviewStep is one controller step a preview runs.
type PreviewStep struct {
	Step       int                  `json:"step"`
	Controller lifecycle.Controller `json:"controller"`
}

// PreviewDiffInput asks for the per-cluster difference between the scratch context and
// the running one (Previous; "" for an instantiate), laid out in the plan's stages.
type PreviewDiffInput struct {
	DIG       lifecycle.Target `json:"dig"`
	ContextID string           `json:"contextId"`
	Start     PreviewStart     `json:"start"`
	Plan      lifecycle.Plan   `json:"plan"`
	Limit     int              `json:"limit"`
}

// RolloutPreview answers a preview: for each stage, in order, the clusters it would
// change and what, then (Removed) the clusters the new placement no longer uses.
type RolloutPreview struct {
	Op string `json:"op"` // instantiate, update or rollback
	// WorkflowID is the preview's own run (PreviewRollout), for the Temporal UI.
	WorkflowID string `json:"workflowId"`
	// CurrentRevision is the running revision (absent before an instantiate), Revision the
	// one the operation would record.
	CurrentRevision int64          `json:"currentRevision,omitempty"`
	Revision        int64          `json:"revision"`
	Strategy        string         `json:"strategy"` // "" without a rollout strategy
	Stages          []PreviewStage `json:"stages"`
	Totals          PreviewCounts  `json:"totals"`
	// Limit is how many clusters each stage details at most.
	Limit int      `json:"limit"`
	Notes []string `json:"notes,omitempty"`
}

// PreviewStage is one stage of a preview: its clusters in the order the stage changes
// them (the first Limit), and counts over all of them.
type PreviewStage struct {
	Name string `json:"name"`
	// Removed marks the pseudo-stage of clusters the new placement drops: everything the
	// running revision has there is deleted.
	Removed  bool             `json:"removedClusters,omitempty"`
	Clusters []ClusterPreview `json:"clusters"`
	// More counts the clusters beyond the limit, not detailed.
	More   int           `json:"more,omitempty"`
	Counts PreviewCounts `json:"counts"`
}

// ClusterPreview is what an operation would change on one cluster: objects named
// "Kind/namespace/name" (or "Kind/name" when cluster-scoped).
type ClusterPreview struct {
	Cluster   string   `json:"cluster"` // provider+cluster
	Added     []string `json:"added"`
	Changed   []string `json:"changed"`
	Removed   []string `json:"removed"`
	Unchanged bool     `json:"unchanged,omitempty"` // nothing added, changed or removed
	Dropped   bool     `json:"dropped,omitempty"`   // the new placement no longer uses the cluster
	// Same counts the objects the operation leaves as they are.
	Same int `json:"same"`
}

// PreviewCounts sum a stage (or the whole preview): its clusters, those with a change,
// and the objects added, changed, removed and left as they are.
type PreviewCounts struct {
	Clusters  int `json:"clusters"`
	Changing  int `json:"changing"`
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
}

// Add sums another cluster's preview into the counts.
func (c *PreviewCounts) Add(p ClusterPreview) {
	c.Clusters++
	if !p.Unchanged {
		c.Changing++
	}
	c.Added += len(p.Added)
	c.Changed += len(p.Changed)
	c.Removed += len(p.Removed)
	c.Unchanged += p.Same
}

// Sum adds other counts.
func (c *PreviewCounts) Sum(o PreviewCounts) {
	c.Clusters += o.Clusters
	c.Changing += o.Changing
	c.Added += o.Added
	c.Changed += o.Changed
	c.Removed += o.Removed
	c.Unchanged += o.Unchanged
}

// PreviewRefused is a rollout preview the DIG's state does not allow, or (BadRevision)
// one asking for a revision its current instance does not have.
type PreviewRefused struct {
	Message     string
	BadRevision bool
}

func (e *PreviewRefused) Error() string { return e.Message }

// Preview is the operation a rollout preview of dig shows: a rollback to revision when it
// is set, else the instantiate or update its state allows next, with the running context
// and revision it would replace and the revision it would record.
func Preview(dig lifecycle.Target, info lifecycle.StateInfo, revision int64) (PreviewStart, error) {
	cur := info.Current()
	var last lifecycle.Action
	if n := len(info.Actions); n > 0 {
		last = info.Actions[n-1]
	}
	if revision > 0 {
		if _, err := lifecycle.DIGs.Machine.Start(dig.String(), lifecycle.OpRollback, cur); err != nil {
			return PreviewStart{}, &PreviewRefused{Message: err.Error()}
		}
		src, ok := info.RevisionContext(revision)
		if !ok {
			return PreviewStart{}, &PreviewRefused{BadRevision: true, Message: fmt.Sprintf(
				"%s has no revision %d in its current instance (revisions 1 to %d)", dig, revision, info.LatestRevision())}
		}
		return PreviewStart{Op: lifecycle.OpRollback, Previous: last.ContextID, Source: src, Current: last.Revision,
			Revision: info.LatestRevision() + 1}, nil
	}
	if _, err := lifecycle.DIGs.Machine.Start(dig.String(), lifecycle.OpInstantiate, cur); err == nil {
		return PreviewStart{Op: lifecycle.OpInstantiate, Revision: 1}, nil
	}
	if _, err := lifecycle.DIGs.Machine.Start(dig.String(), lifecycle.OpUpdate, cur); err == nil {
		return PreviewStart{Op: lifecycle.OpUpdate, Previous: last.ContextID, Current: last.Revision,
			Revision: info.LatestRevision() + 1}, nil
	}
	return PreviewStart{}, &PreviewRefused{Message: fmt.Sprintf(
		"%s is %s: a rollout preview shows its next instantiate (when it is Approved or Terminated) or update (when it is Instantiated)",
		dig, cmp.Or(cur, "new"))}
}

// PreviewFailed is a preview that could not finish (its Starter says so): a step failed after its attempts (a
// store or worker that did not answer). Nothing was changed; it may be asked again.
type PreviewFailed struct{ Message string }

func (e *PreviewFailed) Error() string { return e.Message }

func init() { lifecycle.DeclareWorkflows(WorkflowPreviewRollout) }

// work (work.Activities): a rollout preview's steps (see preview.go);
// DeletePreview takes the scratch context's id.
var byPreview = lifecycle.Implementer{Package: "features/preview/work", Struct: "Activities"}

var (
	BeginPreview       = lifecycle.Declare[PreviewInput, PreviewStart](byPreview, "BeginPreview")
	PreviewControllers = lifecycle.Declare[[]lifecycle.Controller, PreviewChoice](byPreview, "PreviewControllers")
	DiffPreview        = lifecycle.Declare[PreviewDiffInput, RolloutPreview](byPreview, "DiffPreview")
	DeletePreview      = lifecycle.Declare[string, lifecycle.None](byPreview, "DeletePreview")
)
