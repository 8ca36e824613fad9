// What a cluster activity that returned without error left undone: a fault of temco,
// failed rather than counted done.

package cluster

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// failUnreached fails what an apply (done: Applied) or a removal (done: Deleted) that
// returned without error left undone: an object (of only, when given) neither done nor
// Failed, and an app placed here that the context as loaded lacks (none of its objects
// listed). Only a fault of temco leaves either; one did once (a cached header without
// its apps), and the operation said Instantiated with nothing applied. The objects are
// Failed with the reason; the apps, which have no objects to mark, fail the activity for
// good, naming them.
func (r *run) failUnreached(done string, only map[string][]int) error {
	verb := map[string]string{lifecycle.ResApplied: "applied", lifecycle.ResDeleted: "deleted"}[done]
	var missing []string
	cluster, failed := "", false
	for app, p := range r.byApp {
		cluster = p.Cluster
		idx, scoped := only[app]
		if only != nil && !scoped {
			continue
		}
		if p.Unlisted || r.apps[app] == nil || !slices.Contains(r.header.Apps, app) {
			// A removal has nothing to do where nothing was applied: the placement of a
			// context whose preparation failed, say.
			if done == lifecycle.ResApplied || slices.ContainsFunc(p.Resources, mayExist) {
				missing = append(missing, app)
			}
			continue
		}
		for i := range p.Resources {
			if s := p.Resources[i].Status; s == done || s == lifecycle.ResFailed || only != nil && !slices.Contains(idx, i) {
				continue
			}
			r.setFailed(&p.Resources[i], "not "+verb+": the cluster's activity ended without reaching it (a fault of temco)")
			failed = true
		}
	}
	if failed { // for the flush that follows
		r.mu.Lock()
		r.unsaved = true
		r.mu.Unlock()
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("apps %s are placed on cluster %s but were missing from context %s as loaded: none of their objects was %s (a fault of temco)",
		strings.Join(missing, ", "), cluster, r.header.ID, verb), map[string]string{lifecycle.ResApplied: lifecycle.ErrApplyFailed, lifecycle.ResDeleted: lifecycle.ErrDeleteFailed}[done], nil)
}

// mayExist says whether an object may be on its cluster: an apply was tried.
func mayExist(res appctx.ResourceStatus) bool {
	return res.Status != lifecycle.ResPending && res.Status != lifecycle.ResDeleted
}
