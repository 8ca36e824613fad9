package cluster

import (
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// An update or rollback applies a new revision as a difference from the running one, per
// cluster: objects whose content is unchanged are not sent again, and objects the new
// revision no longer has are deleted afterwards. These functions plan that; they do no I/O.

// objectKey identifies an object on a cluster across revisions: its API version may
// change, its identity may not. namespace is the one it was (or will be) applied to.
func objectKey(r appctx.Ref, namespace string) string {
	return r.Group + "/" + r.Kind + "/" + namespace + "/" + r.Name
}

// appliedHashes indexes what the previous revision has applied on a cluster: the content
// hash of every Applied object, by objectKey.
func appliedHashes(prev []*appctx.ClusterApp, prevApps map[string]*appctx.App) map[string]string {
	out := map[string]string{}
	for _, p := range prev {
		app := prevApps[p.App]
		if app == nil {
			continue
		}
		for i, r := range p.Resources {
			if r.Status == lifecycle.ResApplied && i < len(app.Objects) {
				out[objectKey(r.Ref, r.Namespace)] = app.Objects[i].Hash
			}
		}
	}
	return out
}

// unchanged reports whether obj, going to namespace, is already applied as is.
func unchanged(applied map[string]string, obj *appctx.Object, namespace string) bool {
	h, ok := applied[objectKey(obj.Ref, namespace)]
	return ok && h == obj.Hash
}

// toPrune lists, per app of the previous revision on a cluster, the indices of the objects
// the next revision does not have there (any app of it): they must be deleted. Objects
// never applied (Pending) or already Deleted are left alone. next is nil for a cluster the
// next revision no longer uses.
func toPrune(prev, next []*appctx.ClusterApp) map[string][]int {
	keep := map[string]bool{}
	for _, p := range next {
		for _, r := range p.Resources {
			keep[objectKey(r.Ref, r.Namespace)] = true
		}
	}
	out := map[string][]int{}
	for _, p := range prev {
		for i, r := range p.Resources {
			if r.Status == lifecycle.ResPending || r.Status == lifecycle.ResDeleted {
				continue
			}
			if !keep[objectKey(r.Ref, r.Namespace)] {
				out[p.App] = append(out[p.App], i)
			}
		}
	}
	return out
}
