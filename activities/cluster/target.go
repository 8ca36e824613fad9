// How a cluster activity reaches its cluster: chosen by the cluster's registration.

package cluster

import (
	"context"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
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
	read(ctx context.Context, header *appctx.Context, placements []*appctx.ClusterApp, how reading) lifecycle.ClusterResult
}

// placed is what a context places on one cluster: its apps there and their rendered objects.
type placed struct {
	header     *appctx.Context
	placements []*appctx.ClusterApp
	apps       map[string]*appctx.App
}

// target returns how to reach cluster key for a context: through git when the cluster
// was registered with spec.gitOps, else with its kubeconfig — or, for a context in a
// standard or privileged logical cloud, with the cloud's credential there: a kubeconfig
// temco issued, or on a GitOps cluster the cloud's ServiceAccount, which the deployment's
// Kustomization impersonates.
func (c *Clients) target(ctx context.Context, key string, header *appctx.Context) (target, error) {
	if header.Credentials != "" {
		// A logical cloud's credential on an agent cluster is never issued (the api
		// refuses standard clouds there): only admin clouds reach agent clusters.
		raw, sealed, err := c.kubeconfig(ctx, key, header.Credentials)
		if err != nil {
			return nil, err
		}
		if sa, ok := cloudAccountOf(raw); ok {
			doc, err := c.clusterDoc(ctx, key)
			if err != nil {
				return nil, err
			}
			if doc.Fields[gitOpsField] != "true" {
				return nil, permanentf("logical cloud %s holds a GitOps credential on cluster %q, which is no longer reached through GitOps: update the logical cloud", header.Credentials, key)
			}
			g, err := c.gitCluster(ctx, key, doc)
			if err != nil {
				return nil, err
			}
			g.tenant = sa
			return g, nil
		}
		cl, err := c.client(key, header.Credentials, raw, sealed)
		if err != nil {
			return nil, err
		}
		return cl, nil
	}
	doc, err := c.clusterDoc(ctx, key)
	if err != nil {
		return nil, err
	}
	return c.targetOf(ctx, key, doc)
}

// targetOf is the target of cluster key registered as doc, with its own credentials.
func (c *Clients) targetOf(ctx context.Context, key string, doc *store.Doc) (target, error) {
	if doc.Fields[accessField] == model.AccessAgent {
		return &agentCluster{key: key, agents: c.agents()}, nil
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

// GitOps tells whether cluster key is reached through git (registered with spec.gitOps).
func (c *Clients) GitOps(ctx context.Context, key string) (bool, error) {
	doc, err := c.clusterDoc(ctx, key)
	if err != nil {
		return false, err
	}
	return doc.Fields[gitOpsField] == "true", nil
}
