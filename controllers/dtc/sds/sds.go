// Package sds is EMCO's service discovery sub-controller of dtc: once a deployment is on
// its clusters, every client cluster that does not run an inbound intent's server gets a
// headless Service named like the server's Service, with Endpoints at the address where
// the server's clusters expose it (a NodePort Service's node address, or a LoadBalancer's
// ingress IP), so the clients resolve the server's name there.
//
// EMCO's sds does this in a goroutine started by the instantiate: it waits until the
// context is Instantiated and the Service has its address, then installs a child
// AppContext holding the objects; a restart loses the wait, and terminating the DIG
// leaves the objects behind. temco does it through the contract's hooks instead:
//   - Finished, after each instantiate, update or rollback has finished on the clusters,
//     reads the server's Service (it comes from the app's chart; the kube-apiserver gives
//     a NodePort Service its port when it is applied) and the nodes from the live server
//     clusters, and server-side applies the Service and Endpoints to the client clusters
//     with field manager temco-sds. It converges: an entry no longer wanted — a client
//     moved or gone, a server now placed beside it — is deleted. Finished is an activity
//     of the operation's workflow, retried for a few minutes, so a restart loses nothing.
//   - Terminate, before a terminate deletes anything, deletes every entry of the instance.
//   - Every object carries app.kubernetes.io/managed-by=temco-sds and
//     sds.temco.io/instance=<the instance's first context id> (labels), and the DIG's
//     path and the inbound intent (annotations): `kubectl get svc,endpoints -A -l
//     app.kubernetes.io/managed-by=temco-sds` lists them. They are not part of the
//     AppContext, so the DIG's status does not count them; a Finished that fails is
//     logged by the worker and visible in the operation's workflow history.
//
// Where temco departs from EMCO, deliberately, besides the above:
//   - The Endpoints of a NodePort server reach its node port (EMCO points them at the
//     Service's own port, which nothing on the node listens on), and carry the Service
//     port's protocol (EMCO's default to TCP).
//   - A server on several clusters gives one Endpoints with a subset per server cluster
//     (EMCO installs one child context per server cluster, all with objects of the same
//     name, and puts entries on client clusters that run the server too, replacing its
//     Service there).
//   - The node address is the first node's (by name) InternalIP (EMCO: the first node's
//     first address of any type).
//   - EMCO waits for the server's Deployment to be available; the address does not depend
//     on it, so temco does not.
package sds

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/client-go/kubernetes"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/internal/core/appctx"
)

// Controller is sds as built into temco, registered in /v2/dtc-controllers; EMCO's files
// register it as sds with host sds.
var Controller = controllers.Builtin{
	Name:   "sds",
	Type:   contract.TypeAction,
	Hosts:  []string{"sds"},
	Parent: "dtc",
	New: func(d controllers.Deps) contract.Controller {
		return &controller{src: liveSources{deps: d}}
	},
}

// sources is what sds reads and where it writes, besides the context.
type sources interface {
	Group(ctx context.Context, in contract.Input) (*dtc.TrafficGroup, error)
	// Context is a context's header: its namespace and the instance it belongs to.
	Context(ctx context.Context, id string) (*appctx.Context, error)
	// Clusters are the clusters a context places apps on.
	Clusters(ctx context.Context, id string) ([]string, error)
	Client(ctx context.Context, cluster string) (kubernetes.Interface, error)
}

type controller struct{ src sources }

// Run edits nothing: sds works once the apps are on the clusters. It refuses a traffic
// group naming apps the composite app does not have, before anything is applied.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil
	}
	g, err := c.src.Group(ctx, in)
	if err != nil {
		return err
	}
	placed, err := placement(ctx, v)
	if err != nil {
		return err
	}
	for _, isi := range g.Inbound {
		where := fmt.Sprintf("traffic group intent %q, inbound intent %q", g.Name, isi.Name)
		if _, ok := placed[isi.Spec.App]; !ok {
			return contract.Refuse("%s: server app %q is not an app of the composite app", where, isi.Spec.App)
		}
		for _, cl := range isi.Clients {
			if _, ok := placed[cl.Spec.App]; !ok && cl.Spec.App != "" {
				return contract.Refuse("%s, client %q: app %q is not an app of the composite app", where, cl.Name, cl.Spec.App)
			}
		}
	}
	return nil
}

// Finished makes the client clusters' entries what the deployed context asks for.
func (c *controller) Finished(ctx context.Context, v contract.Context) error {
	in := v.Input()
	hdr, err := c.src.Context(ctx, in.ContextID)
	if err != nil {
		return fmt.Errorf("context %s: %w", in.ContextID, err)
	}
	o := owner{Instance: hdr.Instance, DIG: dtc.DIG(in)}
	clusters, err := c.clusters(ctx, v)
	if err != nil {
		return err
	}
	if in.Operation == contract.OpTerminate {
		return c.converge(ctx, o, clusters, nil, nil)
	}
	g, err := c.src.Group(ctx, in)
	if err != nil {
		return err
	}
	placed, err := placement(ctx, v)
	if err != nil {
		return err
	}
	want := map[string][]entry{}
	keep := map[string][]string{} // entries to leave as they are: their server cannot be read now
	var errs []error
	for _, d := range discoveries(g, placed) {
		addrs, err := c.serverAddresses(ctx, d, hdr.Namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("inbound intent %q: %w", d.Inbound, err))
			for _, t := range d.Targets {
				keep[t] = append(keep[t], hdr.Namespace+"/"+d.Service)
			}
			continue
		}
		e := entryFor(o, d, hdr.Namespace, addrs)
		for _, t := range d.Targets {
			if slices.ContainsFunc(want[t], func(x entry) bool { return x.key() == e.key() }) {
				errs = append(errs, fmt.Errorf("inbound intent %q: another inbound intent already names Service %s on %s", d.Inbound, e.key(), t))
				continue
			}
			want[t] = append(want[t], e)
		}
	}
	return errors.Join(append(errs, c.converge(ctx, o, clusters, want, keep))...)
}

// Terminate deletes the instance's entries before the deployment goes.
func (c *controller) Terminate(ctx context.Context, v contract.Context) error {
	in := v.Input()
	hdr, err := c.src.Context(ctx, in.ContextID)
	if err != nil {
		return fmt.Errorf("context %s: %w", in.ContextID, err)
	}
	clusters, err := c.clusters(ctx, v)
	if err != nil {
		return err
	}
	return c.converge(ctx, owner{Instance: hdr.Instance, DIG: dtc.DIG(in)}, clusters, nil, nil)
}

// clusters are where entries may be: the clusters of the context's apps and, after an
// update, of the context it replaced.
func (c *controller) clusters(ctx context.Context, v contract.Context) ([]string, error) {
	apps, err := v.Apps(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range apps {
		out = append(out, a.Clusters...)
	}
	if prev := v.Input().PreviousContextID; prev != "" {
		before, err := c.src.Clusters(ctx, prev)
		if err != nil {
			return nil, fmt.Errorf("clusters of context %s: %w", prev, err)
		}
		out = append(out, before...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func placement(ctx context.Context, v contract.Context) (map[string][]string, error) {
	apps, err := v.Apps(ctx)
	if err != nil {
		return nil, err
	}
	placed := map[string][]string{}
	for _, a := range apps {
		placed[a.Name] = a.Clusters
	}
	return placed, nil
}

// liveSources reads the store and the clusters with their registered credentials.
type liveSources struct{ deps controllers.Deps }

func (s liveSources) Group(ctx context.Context, in contract.Input) (*dtc.TrafficGroup, error) {
	return dtc.Load(ctx, s.deps.Store, in)
}

func (s liveSources) Context(ctx context.Context, id string) (*appctx.Context, error) {
	return s.deps.Contexts.Get(ctx, id)
}

func (s liveSources) Clusters(ctx context.Context, id string) ([]string, error) {
	placements, err := s.deps.Contexts.Placements(ctx, id, appctx.Filter{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range placements {
		out = append(out, p.Cluster)
	}
	return out, nil
}

func (s liveSources) Client(ctx context.Context, cluster string) (kubernetes.Interface, error) {
	if s.deps.Admin == nil {
		return nil, errors.New("no cluster credentials are available to sds")
	}
	cfg, err := s.deps.Admin(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("credentials of cluster %s: %w", cluster, err)
	}
	return kubernetes.NewForConfig(cfg)
}
