// How a cluster activity reaches its cluster: chosen by the cluster's registration.

package cluster

import (
	"context"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/lifecycle"
)

// target is one way of reaching a cluster: its Kubernetes API (*client: server-side
// apply, reads and deletes) or the git repository its Flux controllers pull from
// (*gitCluster: one commit of the cluster's desired state, Flux's report read back from
// git). The activities, the objects' statuses, Retrying and recovery are the same for both:
// an error from a target is transient (Temporal retries the activity); what retrying
// cannot fix marks objects Failed.
type target interface {
	// apply brings every app placed on the cluster (r.placements) onto it.
	apply(r *run) error
	// remove deletes the placed objects (those in only, when not nil). next is what the
	// cluster keeps (an update's next revision there), nil when everything goes.
	remove(r *run, only map[string][]int, next *placed) error
	// read fills the placements' Live states.
	read(ctx context.Context, header *appctx.Context, placements []*appctx.ClusterApp, detail bool) lifecycle.ClusterResult
}

// placed is what a context places on one cluster: its apps there and their rendered objects.
type placed struct {
	header     *appctx.Context
	placements []*appctx.ClusterApp
	apps       map[string]*appctx.App
}

// target returns how to reach cluster key for a context: through git when the cluster
// was registered with spec.gitOps, else with its kubeconfig (or the logical cloud's
// credentials there: only clusters reached with a kubeconfig have them).
func (c *Clients) target(ctx context.Context, key string, header *appctx.Context) (target, error) {
	if header.Credentials != "" {
		cl, err := c.For(ctx, key, header.Credentials)
		if err != nil {
			return nil, err
		}
		return cl, nil
	}
	doc, err := c.clusterDoc(ctx, key)
	if err != nil {
		return nil, err
	}
	if doc.Fields[gitOpsField] == "true" {
		g, err := c.gitCluster(ctx, key, doc)
		if err != nil {
			return nil, err
		}
		return g, nil
	}
	raw, sealed, err := c.open(key, doc)
	if err != nil {
		return nil, err
	}
	cl, err := c.client(key, "", raw, sealed)
	if err != nil {
		return nil, err
	}
	return cl, nil
}
