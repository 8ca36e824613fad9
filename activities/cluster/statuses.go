// Recording objects' statuses during a cluster activity, and writing them to the AppContext.

package cluster

import (
	"context"
	"slices"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// settle records an object's final status for this attempt (Applied, Deleted or Failed).
// Goroutines of the same cluster share the statuses, hence the lock.
func (r *run) settle(res *appctx.ResourceStatus, status, msg string) {
	r.settleWarned(res, status, msg, "")
}

// settleWarned is settle with a warning of what the object's apply left out.
func (r *run) settleWarned(res *appctx.ResourceStatus, status, msg, warning string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Status, res.Error, res.Warning, res.Attempts, res.Updated = status, msg, warning, 0, time.Now().UTC()
	if status == lifecycle.ResFailed {
		r.result.Failed++
	} else {
		r.result.Done++
	}
}

// noteWaiting records, as the object's warning, what its deletion waits for, and writes
// it at once: nothing else may progress while it waits.
func (r *run) noteWaiting(res *appctx.ResourceStatus, note string) {
	r.mu.Lock()
	res.Warning = note
	r.unsaved = true
	r.mu.Unlock()
	_ = r.save(r.ctx) // a failed write is made again by the next
}

func (r *run) setFailed(res *appctx.ResourceStatus, msg string) {
	r.settle(res, lifecycle.ResFailed, msg)
}

// progressEvery spaces the writes of a cluster's statuses while its objects progress: most
// clusters are done within a second, with one write at the end instead of one per app (a
// third of the database writes at scale); a slow one shows progress every second, and
// waits flush what is done.
const progressEvery = time.Second

// save writes the statuses of all apps on the cluster (one document). The statuses are
// copied under mu and written outside it: the cluster's other goroutines keep applying
// during the write. writeMu keeps the writes in the order of their copies.
func (r *run) save(ctx context.Context) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.Lock()
	r.saved, r.unsaved = time.Now(), false
	snapshot := r.placements()
	for i, p := range snapshot {
		cp := *p
		cp.Resources = slices.Clone(p.Resources)
		snapshot[i] = &cp
	}
	r.mu.Unlock()
	return r.contexts.SaveStatuses(ctx, r.header.ID, r.writer, snapshot)
}

// progress notes that statuses changed and writes them if the last write is older than
// progressEvery; the goroutine that finds it due writes, the others go on.
func (r *run) progress(ctx context.Context) error {
	r.mu.Lock()
	r.unsaved = true
	due := time.Since(r.saved) >= progressEvery
	if due {
		r.saved = time.Now()
	}
	r.mu.Unlock()
	if !due {
		return nil
	}
	return r.save(ctx)
}

// flush writes statuses not written yet: before waiting, so that the wait shows what is done.
func (r *run) flush(ctx context.Context) error {
	r.mu.Lock()
	unsaved := r.unsaved
	r.mu.Unlock()
	if !unsaved {
		return nil
	}
	return r.save(ctx)
}
