// A worker's cache of recent contexts (header and rendered apps), loaded once for all clusters.

package cluster

import (
	"context"
	"time"

	"github.com/temco/temco/internal/core/appctx"
)

type contextCacheEntry struct {
	header *appctx.Context
	apps   map[string]*appctx.App // nil until loaded
	size   int                    // bytes of the apps' manifests
}

// The cache holds the contexts most recently used, as many as maxCachedContexts and
// maxCachedBytes of manifests allow: a fleet of rollouts runs a hundred contexts at once,
// and a context evicted is loaded again by each of its next activities.
const (
	maxCachedContexts = 256
	maxCachedBytes    = 256 << 20
)

// header returns the header of a context, cached: every cluster of a context needs it,
// and what they read of it does not change once the context is prepared (its status
// does, which the cluster activities do not read).
//
// keep says whether a header loaded now is kept. Only an operation's own cluster
// activities keep what they load: they run once the context is prepared. A live read, a
// drift check or the autoscaler may come while it is still being prepared (its apps not
// rendered yet, controllers still adding theirs), and a copy kept then would have the
// apply that follows deploy nothing; they use a kept copy, and otherwise read the store.
func (a *Activities) header(ctx context.Context, ctxID string, keep bool) (*appctx.Context, error) {
	if h, _ := a.cached(ctxID); h != nil {
		return h, nil
	}
	v, err, _ := a.loading.Do(loadKey("header/", ctxID, keep), func() (any, error) {
		if h, _ := a.cached(ctxID); h != nil { // loaded since this caller looked
			return h, nil
		}
		lctx, cancel := detached(ctx)
		defer cancel()
		h, err := a.Contexts.Get(lctx, ctxID)
		if err != nil || !keep {
			return h, err
		}
		a.cacheMu.Lock()
		a.cache = append([]*contextCacheEntry{{header: h}}, a.cache...)
		a.evict()
		a.cacheMu.Unlock()
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*appctx.Context), nil
}

// context returns the header and rendered apps of a context, cached like the header (and
// kept only as it is): the apps do not change either once the context is prepared.
func (a *Activities) context(ctx context.Context, ctxID string, keep bool) (*appctx.Context, map[string]*appctx.App, error) {
	h, err := a.header(ctx, ctxID, keep)
	if err != nil {
		return nil, nil, err
	}
	if _, apps := a.cached(ctxID); apps != nil {
		return h, apps, nil
	}
	v, err, _ := a.loading.Do(loadKey("apps/", ctxID, keep), func() (any, error) {
		if _, apps := a.cached(ctxID); apps != nil {
			return apps, nil
		}
		lctx, cancel := detached(ctx)
		defer cancel()
		apps, err := a.Contexts.Apps(lctx, h)
		if err != nil || !keep {
			return apps, err
		}
		a.cacheMu.Lock()
		for _, e := range a.cache {
			if e.header.ID == ctxID {
				e.apps, e.size = apps, manifestBytes(apps)
			}
		}
		a.evict()
		a.cacheMu.Unlock()
		return apps, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return h, v.(map[string]*appctx.App), nil
}

// loadKey names a load shared by concurrent callers: one that keeps is never shared with
// one that does not, which may have begun before the context was prepared.
func loadKey(what, ctxID string, keep bool) string {
	if keep {
		return what + ctxID
	}
	return what + ctxID + "/unkept"
}

// detached is the context of a load that many activities wait for: not tied to the first
// caller's, whose cancellation must not fail the others.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// cached returns what the cache holds of a context (nil when nothing), and makes it the
// most recently used.
func (a *Activities) cached(ctxID string) (*appctx.Context, map[string]*appctx.App) {
	a.cacheMu.Lock()
	defer a.cacheMu.Unlock()
	for i, e := range a.cache {
		if e.header.ID == ctxID {
			copy(a.cache[1:i+1], a.cache[:i])
			a.cache[0] = e
			return e.header, e.apps
		}
	}
	return nil, nil
}

// evict drops the least recently used contexts beyond the cache's bounds (the most recent
// one stays, however large). cacheMu is held.
func (a *Activities) evict() {
	total := 0
	for i, e := range a.cache {
		total += e.size
		if i > 0 && (i >= maxCachedContexts || total > maxCachedBytes) {
			clear(a.cache[i:]) // not kept alive by the backing array
			a.cache = a.cache[:i]
			return
		}
	}
}

func manifestBytes(apps map[string]*appctx.App) int {
	n := 0
	for _, app := range apps {
		for _, o := range app.Objects {
			n += len(o.Manifest)
		}
	}
	return n
}
