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
}

// header returns the header of a context, cached: every cluster of a context needs it,
// and what they read of it does not change once the context is prepared (its status
// does, which the cluster activities do not read).
func (a *Activities) header(ctx context.Context, ctxID string) (*appctx.Context, error) {
	if h, _ := a.cached(ctxID); h != nil {
		return h, nil
	}
	v, err, _ := a.loading.Do("header/"+ctxID, func() (any, error) {
		if h, _ := a.cached(ctxID); h != nil { // loaded since this caller looked
			return h, nil
		}
		lctx, cancel := detached(ctx)
		defer cancel()
		h, err := a.Contexts.Get(lctx, ctxID)
		if err != nil {
			return nil, err
		}
		a.cacheMu.Lock()
		a.cache = append([]*contextCacheEntry{{header: h}}, a.cache...)
		if len(a.cache) > 8 {
			a.cache = a.cache[:8]
		}
		a.cacheMu.Unlock()
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*appctx.Context), nil
}

// context returns the header and rendered apps of a context, cached like the header:
// the apps do not change either once the context is prepared.
func (a *Activities) context(ctx context.Context, ctxID string) (*appctx.Context, map[string]*appctx.App, error) {
	h, err := a.header(ctx, ctxID)
	if err != nil {
		return nil, nil, err
	}
	if _, apps := a.cached(ctxID); apps != nil {
		return h, apps, nil
	}
	v, err, _ := a.loading.Do("apps/"+ctxID, func() (any, error) {
		if _, apps := a.cached(ctxID); apps != nil {
			return apps, nil
		}
		lctx, cancel := detached(ctx)
		defer cancel()
		apps, err := a.Contexts.Apps(lctx, h)
		if err != nil {
			return nil, err
		}
		a.cacheMu.Lock()
		for _, e := range a.cache {
			if e.header.ID == ctxID {
				e.apps = apps
			}
		}
		a.cacheMu.Unlock()
		return apps, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return h, v.(map[string]*appctx.App), nil
}

// detached is the context of a load that many activities wait for: not tied to the first
// caller's, whose cancellation must not fail the others.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// cached returns what the cache holds of a context (nil when nothing).
func (a *Activities) cached(ctxID string) (*appctx.Context, map[string]*appctx.App) {
	a.cacheMu.Lock()
	defer a.cacheMu.Unlock()
	for _, e := range a.cache {
		if e.header.ID == ctxID {
			return e.header, e.apps
		}
	}
	return nil, nil
}
