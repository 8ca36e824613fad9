package gac

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// values looks up the $(URL)$ values of one run's customizations, each URL once.
type values struct {
	store    controllers.Docs
	urls     *fetcher
	clusters map[string]bool // the deployment's clusters ("provider+cluster")
	got      map[string]any  // by URL
}

// needed reports whether a customization still has $(URL)$ values to look up.
func (v *values) needed(c *customization) bool {
	if c.resolved {
		return false
	}
	return slices.ContainsFunc(c.Spec.PatchJSON, func(op map[string]any) bool { _, ok := urlOf(op["value"]); return ok })
}

// resolve replaces a customization's $(URL)$ values by what they stand for. A lookup that
// can never succeed refuses the operation; a transient one is retried with the controller.
func (v *values) resolve(ctx context.Context, r *resource, c *customization) error {
	if !v.needed(c) {
		return nil
	}
	lookups, err := lookupsOf(c.Spec)
	if err != nil {
		return contract.Refuse("gac resource %s, customization %s: %v", r.Name, c.Name, err)
	}
	ops := slices.Clone(c.Spec.PatchJSON)
	for _, i := range slices.Sorted(maps.Keys(lookups)) {
		l := lookups[i]
		val, err := v.lookup(ctx, l)
		if err != nil {
			where := fmt.Sprintf("gac resource %s, customization %s: the $(URL)$ of patchJson[%d].value (host %s)", r.Name, c.Name, i, l.host())
			if le := (*lookupError)(nil); errors.As(err, &le) && !le.transient {
				return contract.Refuse("%s: %v", where, le)
			}
			return fmt.Errorf("%s: %w", where, err)
		}
		op := maps.Clone(ops[i])
		op["value"] = val
		ops[i] = op
	}
	c.Spec.PatchJSON = ops
	c.resolved = true
	return nil
}

func (v *values) lookup(ctx context.Context, l lookup) (any, error) {
	key := l.URL.String()
	if val, ok := v.got[key]; ok {
		return val, nil
	}
	var val any
	var err error
	if l.KV != nil {
		val, err = v.kv(ctx, *l.KV)
	} else {
		val, err = v.urls.get(ctx, l.URL)
	}
	if err != nil {
		return nil, err
	}
	v.got[key] = val
	return val, nil
}

// kv is what GET /v2/cluster-providers/{p}/clusters/{c}/kv-pairs/{kv}?key=K answers as
// "value" (api's kvValue): the value of the first entry holding the key. Only the kv-pairs
// of the deployment's own clusters are read: kv-pairs are the admin's, and a project's
// customization must not copy those of other tenants' clusters into its objects.
func (v *values) kv(ctx context.Context, k kvKey) (any, error) {
	cluster := contract.Cluster{Provider: k.Provider, Name: k.Cluster}.Key()
	if !v.clusters[cluster] {
		return nil, permanent("cluster %s is not a cluster of this deployment, whose kv-pairs alone gac reads", cluster)
	}
	d, err := v.store.Get(ctx, k.id())
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, permanent("cluster %s has no kv-pairs %q", cluster, k.KVPair)
	}
	if err != nil {
		return nil, fmt.Errorf("read kv-pairs %q of cluster %s: %w", k.KVPair, cluster, err)
	}
	kvs, err := model.Decode[model.KVSpec](d.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.ID, err)
	}
	for _, pair := range kvs.Spec.KV {
		if val, ok := pair[k.Key]; ok {
			return val, nil
		}
	}
	return nil, permanent("kv-pairs %q of cluster %s has no key %q", k.KVPair, cluster, k.Key)
}
