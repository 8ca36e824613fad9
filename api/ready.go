package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// notReady lists what each kind of target lacks before it can be instantiated or updated.
var notReady = map[*lifecycle.Kind]func(*Server, context.Context, lifecycle.Target) ([]string, error){
	lifecycle.DIGs:            (*Server).digNotReady,
	lifecycle.LogicalClouds:   (*Server).cloudNotReady,
	lifecycle.ClusterNetworks: (*Server).clusterNotReady,
	lifecycle.CACerts:         (*Server).certNotReady,
}

// readyFor refuses (409) an instantiate or update whose target lacks a part or would
// reach a cluster temco cannot deploy to, before anything is applied anywhere. A part is
// said missing only when the store said it is absent or not committed yet; a read that
// failed answers 503 naming what could not be read.
func (s *Server) readyFor(ctx context.Context, t lifecycle.Target, op string) error {
	if op != lifecycle.OpInstantiate && op != lifecycle.OpUpdate {
		return nil
	}
	missing, err := notReady[t.Kind()](s, ctx, t)
	var failed *readFailure
	if errors.As(err, &failed) {
		s.Log.Warn("readiness check could not read", "target", t.String(), "op", op, "read", failed.what, "error", failed.err)
		return httpErr(http.StatusServiceUnavailable, "could not check whether %s can be %sd: reading %s failed (the database did not answer or failed); retry",
			t, op, failed.what)
	}
	if err != nil {
		return fromStore(err)
	}
	if len(missing) > 0 {
		return conflict("%s cannot be %sd yet: %s", t, op, strings.Join(missing, "; "))
	}
	return nil
}

// readFailure is a read of a readiness check that failed: the check cannot tell whether
// what it read is there, and says so instead of calling it missing.
type readFailure struct {
	what string // e.g. `controller "dtc"`
	err  error
}

func (e *readFailure) Error() string { return "read " + e.what + ": " + e.err.Error() }
func (e *readFailure) Unwrap() error { return e.err }

// readFailed wraps a failed read of what (nil stays nil).
func readFailed(what string, err error) error {
	if err == nil {
		return nil
	}
	return &readFailure{what: what, err: err}
}

// read reads id for a readiness check: the document, or nil and how it is missing as
// the store saw it: absent (then absent, e.g. "is not registered") or created but not
// committed. A failed read is a readFailure, never absence.
func (s *Server) read(ctx context.Context, id, absent string) (*store.Doc, string, error) {
	d, err := s.Store.Get(ctx, id)
	if since, ok := store.PendingSince(err); ok {
		return nil, notCommitted(since), nil
	}
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, absent, nil
	}
	if err != nil {
		return nil, "", readFailed(describe(id), err)
	}
	return d, "", nil
}

// notCommitted says that a resource's create began at since and has not committed: it is
// under way, or its process stopped mid-way (a new create replaces it once a lease old).
func notCommitted(since time.Time) string {
	return fmt.Sprintf("is not committed yet: its create began at %s and has not completed; retry, or create it again if that create failed",
		since.UTC().Format(time.RFC3339))
}

// get is Store.Get for a readiness check of what must be there (the target, what it
// belongs to): ErrNotFound as is, a failed read a readFailure.
func (s *Server) get(ctx context.Context, id string) (*store.Doc, error) {
	d, err := s.Store.Get(ctx, id)
	if err != nil && store.CodeOf(err) != store.ErrNotFound {
		return nil, readFailed(describe(id), err)
	}
	return d, err
}

// list is Store.List for a readiness check: a failure is a readFailure naming what.
func (s *Server) list(ctx context.Context, q store.Query, what string) ([]*store.Doc, error) {
	docs, err := s.Store.List(ctx, q)
	return docs, readFailed(what, err)
}

// clusterNotReady refuses to apply network intents to a cluster temco cannot reach.
func (s *Server) clusterNotReady(ctx context.Context, t lifecycle.Target) ([]string, error) {
	c, err := s.get(ctx, t.ID())
	if err != nil {
		return nil, err
	}
	if c.Fields[fieldGitOps] == "true" {
		return []string{"the cluster is reached through GitOps; temco applies network intents only to clusters it reaches with a kubeconfig"}, nil
	}
	if c.Fields[fieldAccess] == model.AccessAgent {
		return []string{"the cluster is reached by its agent; temco applies network intents only to clusters it reaches with a kubeconfig"}, nil
	}
	return nil, nil
}

// certNotReady refuses a CA certificate intent's distribution before its enrolment is
// instantiated (EMCO's "enrollment is not ready"), and an enrolment whose issuing cluster
// is not registered or is reached through GitOps.
func (s *Server) certNotReady(ctx context.Context, t lifecycle.Target) ([]string, error) {
	if t.CertStage == lifecycle.CertDistribution {
		e := t.Stage(lifecycle.CertEnrollment)
		d, err := s.get(ctx, e.ID())
		if err != nil {
			return nil, err
		}
		info, err := digstate.Parse(d)
		if err != nil {
			return nil, err
		}
		status := ""
		c, err := s.Contexts.Get(ctx, info.ContextID())
		switch {
		case err == nil:
			status = c.Status
		case !errors.Is(err, appctx.ErrNotFound):
			return nil, readFailed("the status of "+describe(e.ID()), err)
		}
		if info.Current() != lifecycle.StateInstantiated || status != lifecycle.StatusInstantiated {
			return []string{fmt.Sprintf("its enrollment is %s (status %q): instantiate the enrollment (POST %s/instantiate) and let it finish first",
				info.Current(), status, e.ID())}, nil
		}
		return nil, nil
	}
	d, err := s.get(ctx, t.CertID())
	if err != nil {
		return nil, err
	}
	var cert struct {
		Spec struct {
			IssuingCluster struct {
				Cluster, ClusterProvider string
			} `json:"issuingCluster"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(d.Body), &cert); err != nil {
		return nil, err
	}
	ic := cert.Spec.IssuingCluster
	c, why, err := s.read(ctx, lifecycle.ClusterID(lifecycle.ClusterKey(ic.ClusterProvider, ic.Cluster)), "is not registered")
	if err != nil {
		return nil, err
	}
	if c == nil {
		return []string{fmt.Sprintf("its issuing cluster %q of provider %q %s", ic.Cluster, ic.ClusterProvider, why)}, nil
	}
	if c.Fields[fieldGitOps] == "true" || c.Fields[fieldAccess] == model.AccessAgent {
		return []string{fmt.Sprintf("its issuing cluster %q is reached through GitOps or by its agent; the issuing cluster must be reachable with a kubeconfig (temco reads the signed certificate from it)", ic.Cluster)}, nil
	}
	return nil, nil
}

// cloudNotReady names the cluster references of a logical cloud that temco cannot reach.
// An admin cloud changes nothing on its clusters, so GitOps clusters are fine there. A
// standard or privileged cloud's objects are committed to a fluxcd or anthos cluster's
// repository, as EMCO does, with the account its deployments are applied as there (a
// ServiceAccount Flux impersonates, Config Sync's reconciler of the cloud's RepoSync), so
// the cluster's sync objects must be complete; on azureArcV2 clusters nothing temco
// commits would confine its deployments to the cloud's rights.
func (s *Server) cloudNotReady(ctx context.Context, cloud lifecycle.Target) ([]string, error) {
	refs, err := s.list(ctx, store.Query{Parent: cloud.ID(), Kind: model.KindClusterReference}, "the cluster references of "+describe(cloud.ID()))
	if err != nil {
		return nil, err
	}
	lc, err := s.get(ctx, cloud.ID())
	if err != nil {
		return nil, err
	}
	lcSpec, err := model.Decode[model.LogicalCloudSpec](lc.Body)
	if err != nil {
		return nil, err
	}
	admin := cmp.Or(lcSpec.Spec.Level, model.LevelAdmin) == model.LevelAdmin
	var out []string
	for _, r := range refs {
		sp, err := model.Decode[model.ClusterReferenceSpec](r.Body)
		if err != nil {
			return nil, err
		}
		c, why, err := s.read(ctx, "/cluster-providers/"+sp.Spec.ClusterProvider+"/clusters/"+sp.Spec.Cluster, "is not registered")
		if err != nil {
			return nil, err
		}
		if c == nil {
			out = append(out, fmt.Sprintf("cluster reference %q names cluster %s+%s, which %s", r.Name, sp.Spec.ClusterProvider, sp.Spec.Cluster, why))
			continue
		}
		if c.Fields[fieldAccess] == model.AccessAgent && !admin {
			out = append(out, fmt.Sprintf("cluster reference %q names agent cluster %s+%s: standard and privileged logical clouds are not set up on agent "+
				"clusters (temco holds no credential there to issue the cloud's); use an admin (level 0) logical cloud", r.Name, sp.Spec.ClusterProvider, sp.Spec.Cluster))
		}
		if c.Fields[fieldGitOps] == "true" && !admin {
			problems, err := s.levelOneOnGitOps(ctx, c, sp.Spec.ClusterProvider, sp.Spec.Cluster)
			if err != nil {
				return nil, readFailed(fmt.Sprintf("the sync objects of GitOps cluster %s+%s", sp.Spec.ClusterProvider, sp.Spec.Cluster), err)
			}
			for _, p := range problems {
				out = append(out, fmt.Sprintf("cluster reference %q names GitOps cluster %s+%s: %s", r.Name, sp.Spec.ClusterProvider, sp.Spec.Cluster, p))
			}
		}
	}
	return out, nil
}

// levelOneOnGitOps names what keeps a standard or privileged logical cloud off GitOps
// cluster c (provider+cluster).
func (s *Server) levelOneOnGitOps(ctx context.Context, c *store.Doc, provider, cluster string) ([]string, error) {
	spec, err := model.Decode[model.ClusterSpec](c.Body)
	if err != nil {
		return nil, err
	}
	switch typ, _ := syncobject.Type(spec.Spec.GitOps.GitOpsType); typ {
	case syncobject.FluxCD, syncobject.Anthos:
		return s.gitOpsAccessProblems(ctx, provider, cluster)
	default:
		return []string{fmt.Sprintf("standard and privileged logical clouds are set up only on fluxcd and anthos GitOps clusters; on %s "+
			"everything temco commits is applied by the Flux configuration made through Azure's REST API (which temco does not call) "+
			"with that configuration's rights, so the cloud's deployments would not be confined to its namespace and roles",
			spec.Spec.GitOps.GitOpsType)}, nil
	}
}

// digNotReady lists what a DIG lacks to be deployed: EMCO lets its parts be created in
// any order (intents before their placement intent, a DIG before its profile), so
// instantiate and update are where missing parts are named. An empty list: ready. It
// reads the DIG's parts (readDIGParts), names those missing (digParts.missing, pure),
// then what the GitOps clusters its placement intent may place apps on lack.
func (s *Server) digNotReady(ctx context.Context, dig lifecycle.Target) ([]string, error) {
	p, err := s.readDIGParts(ctx, dig)
	if err != nil {
		return nil, err
	}
	missing := p.missing(s.builtin)
	gitOps, err := s.gitOpsPlacements(ctx, dig.ID()+"/generic-placement-intents/"+p.gpi, p.placed != nil)
	if err != nil {
		return nil, err
	}
	return append(missing, gitOps...), nil
}

// digParts is what a DIG's readiness check read of its parts. A part's why says how it
// is missing (see read), "" when it is there.
type digParts struct {
	spec       model.DIGSpec
	ca         string    // the composite app's _id
	apps       []appPart // the composite app's apps, as the store listed them
	cloudWhy   string    // the logical cloud's
	profiles   map[string]bool
	profileWhy string
	gpi        string          // the generic placement intent the intents name; "" none
	placed     map[string]bool // the apps gpi has an app intent for; nil when gpi is missing
	placedWhy  string
	// controllers are the controllers the intents name, by name.
	controllers map[string]controllerPart
}

// appPart is an app of a DIG's composite app and the apps it depends on.
type appPart struct {
	name string
	deps []string
}

// controllerPart is a controller a DIG's intents name: the intent naming it, and its
// spec or how it is missing.
type controllerPart struct {
	intent string
	spec   model.ControllerSpec
	why    string
}

// readDIGParts reads a DIG and its parts: its composite app's apps and each app's
// dependencies; its logical cloud and composite profile, which its spec names; its
// intents, then their generic placement intent and the controllers they name. The three
// chains are independent round trips, read at once (an operation's request waits for
// them). The first failed read ends it.
func (s *Server) readDIGParts(ctx context.Context, dig lifecycle.Target) (*digParts, error) {
	p := &digParts{ca: caOf(dig.ID())}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		d, err := s.get(gctx, dig.ID())
		if err != nil {
			return err
		}
		spec, err := model.Decode[model.DIGSpec](d.Body)
		if err != nil {
			return err
		}
		p.spec = spec.Spec
		var named errgroup.Group
		named.Go(func() (err error) {
			_, p.cloudWhy, err = s.read(gctx, lifecycle.LogicalCloudID(dig.Project, p.spec.LogicalCloud), "does not exist")
			return err
		})
		named.Go(func() (err error) {
			p.profiles, p.profileWhy, err = s.forApps(gctx, p.ca+"/composite-profiles/"+p.spec.CompositeProfile, model.KindAppProfile)
			return err
		})
		return named.Wait()
	})
	g.Go(func() error {
		apps, err := s.list(gctx, store.Query{Parent: p.ca, Kind: model.KindApp}, "the apps of "+describe(p.ca))
		if err != nil {
			return err
		}
		p.apps, err = s.appDependencies(gctx, apps)
		return err
	})
	g.Go(func() error {
		gpi, ctrls, err := s.intentsOf(gctx, dig.ID())
		if err != nil {
			return err
		}
		var named errgroup.Group
		if p.gpi = gpi; gpi != "" {
			named.Go(func() (err error) {
				p.placed, p.placedWhy, err = s.forApps(gctx, dig.ID()+"/generic-placement-intents/"+gpi, model.KindAppIntent)
				return err
			})
		}
		named.Go(func() (err error) {
			p.controllers, err = s.readControllers(gctx, ctrls)
			return err
		})
		return named.Wait()
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return p, nil
}

// appDependencies reads the apps each app depends on, the apps at once.
func (s *Server) appDependencies(ctx context.Context, apps []*store.Doc) ([]appPart, error) {
	out := make([]appPart, len(apps))
	g, gctx := errgroup.WithContext(ctx)
	for i, a := range apps {
		out[i].name = a.Name
		g.Go(func() error {
			deps, err := s.list(gctx, store.Query{Parent: a.ID, Kind: model.KindAppDependency}, "the dependencies of "+describe(a.ID))
			if err != nil {
				return err
			}
			for _, dep := range deps {
				sp, err := model.Decode[model.AppDependencySpec](dep.Body)
				if err != nil {
					return err
				}
				out[i].deps = append(out[i].deps, sp.Spec.App)
			}
			return nil
		})
	}
	return out, g.Wait()
}

// readControllers reads, in name order, the controllers ctrls names (by controller: the
// intent naming it).
func (s *Server) readControllers(ctx context.Context, ctrls map[string]string) (map[string]controllerPart, error) {
	out := make(map[string]controllerPart, len(ctrls))
	for _, name := range slices.Sorted(maps.Keys(ctrls)) {
		c, why, err := s.read(ctx, "/controllers/"+name, "is not registered")
		if err != nil {
			return nil, err
		}
		part := controllerPart{intent: ctrls[name], why: why}
		if c != nil {
			sp, err := model.Decode[model.ControllerSpec](c.Body)
			if err != nil {
				return nil, err
			}
			part.spec = sp.Spec
		}
		out[name] = part
	}
	return out, nil
}

// missing names what of a DIG's parts is missing, in the order they were read; builtin
// reports whether a controller's registration (name, spec.host) means a built-in one.
func (p *digParts) missing(builtin func(name, host string) bool) []string {
	var missing []string
	miss := func(format string, args ...any) { missing = append(missing, fmt.Sprintf(format, args...)) }
	if len(p.apps) == 0 {
		miss("composite app %s has no apps", describe(p.ca))
	}
	if p.cloudWhy != "" {
		miss("logical cloud %q %s", p.spec.LogicalCloud, p.cloudWhy)
	}
	if p.profiles == nil {
		miss("composite profile %q %s", p.spec.CompositeProfile, p.profileWhy)
	}
	switch {
	case p.gpi == "":
		miss("no intents of the DIG name a %s", model.GenericPlacementIntentKey)
	case p.placed == nil:
		miss("generic placement intent %q %s", p.gpi, p.placedWhy)
	}
	appNames := map[string]bool{}
	for _, a := range p.apps {
		appNames[a.name] = true
	}
	for _, a := range p.apps {
		if p.profiles != nil && !p.profiles[a.name] {
			miss("app %q has no profile in composite profile %q", a.name, p.spec.CompositeProfile)
		}
		if p.placed != nil && !p.placed[a.name] {
			miss("app %q has no app intent in generic placement intent %q", a.name, p.gpi)
		}
		for _, dep := range a.deps {
			if !appNames[dep] {
				miss("app %q depends on app %q, which is not in the composite app", a.name, dep)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.controllers)) {
		c := p.controllers[name]
		if c.why != "" {
			miss("intent %q names controller %q, which %s", c.intent, name, c.why)
			continue
		}
		// As in EMCO, a controller of another type (rsync has none) is not run.
		runs := c.spec.Type == model.ControllerPlacement || c.spec.Type == model.ControllerAction
		if runs && c.spec.TaskQueue == "" && !builtin(name, c.spec.Host) {
			miss("intent %q names %s controller %q, which temco does not implement%s", c.intent, c.spec.Type, name,
				emcoHint(name, c.spec.Host))
		}
	}
	return missing
}

// forApps returns, for the resource parent (a composite profile or a generic placement
// intent), which apps its children (profiles or app intents) are for; nil and how it is
// missing (see read) if parent is not there.
func (s *Server) forApps(ctx context.Context, parent, kind string) (map[string]bool, string, error) {
	if p, why, err := s.read(ctx, parent, "does not exist"); p == nil {
		return nil, why, err
	}
	docs, err := s.list(ctx, store.Query{Parent: parent, Kind: kind}, "the children of "+describe(parent))
	if err != nil {
		return nil, "", err
	}
	apps := map[string]bool{}
	for _, d := range docs {
		apps[d.Fields["app"]] = true
	}
	return apps, "", nil
}

// intentsOf merges the DIG's intents: the generic placement intent and, by controller,
// the intent resource naming it.
func (s *Server) intentsOf(ctx context.Context, digID string) (string, map[string]string, error) {
	docs, err := s.list(ctx, store.Query{Parent: digID, Kind: model.KindDIGIntent}, "the intents of "+describe(digID))
	if err != nil {
		return "", nil, err
	}
	gpi, ctrls := "", map[string]string{}
	for _, d := range docs {
		sp, err := model.Decode[model.DIGIntentSpec](d.Body)
		if err != nil {
			return "", nil, err
		}
		for k, v := range sp.Spec.Intent {
			if k == model.GenericPlacementIntentKey {
				gpi = v
			} else {
				ctrls[k] = d.Name
			}
		}
	}
	return gpi, ctrls, nil
}

// gitOpsPlacements names what GitOps clusters the app intents may place apps on lack to
// be deployed to (their sync objects, or the keys these must hold).
func (s *Server) gitOpsPlacements(ctx context.Context, gpiID string, exists bool) ([]string, error) {
	if !exists {
		return nil, nil
	}
	docs, err := s.list(ctx, store.Query{Parent: gpiID, Kind: model.KindAppIntent}, "the app intents of "+describe(gpiID))
	if err != nil {
		return nil, err
	}
	gitOps := map[string][]string{} // by provider: its GitOps clusters
	checked := map[string]bool{}    // GitOps clusters whose access was checked
	var out []string
	for _, d := range docs {
		sp, err := model.Decode[model.AppIntentSpec](d.Body)
		if err != nil {
			return nil, err
		}
		for _, m := range clusterMatches(sp.Spec.Intent) {
			list, seen := gitOps[m.ClusterProvider]
			if !seen {
				if list, err = s.gitOpsClusters(ctx, m.ClusterProvider); err != nil {
					return nil, err
				}
				gitOps[m.ClusterProvider] = list
			}
			for _, c := range list {
				hit := m.Cluster == c
				if m.ClusterLabel != "" {
					label := "/cluster-providers/" + m.ClusterProvider + "/clusters/" + c + "/labels/" + m.ClusterLabel
					if hit, err = s.Store.Exists(ctx, label); err != nil {
						return nil, readFailed(describe(label), err)
					}
				}
				key := lifecycle.ClusterKey(m.ClusterProvider, c)
				if !hit || checked[key] {
					continue
				}
				checked[key] = true
				problems, err := s.gitOpsAccessProblems(ctx, m.ClusterProvider, c)
				if err != nil {
					return nil, readFailed("GitOps cluster "+key+" and its sync objects", err)
				}
				for _, p := range problems {
					out = append(out, fmt.Sprintf("app intent %q may place app %q on GitOps cluster %s: %s", d.Name, sp.Spec.App, key, p))
				}
			}
		}
	}
	return out, nil
}

// gitOpsClusters lists the names of a provider's clusters registered with spec.gitOps.
func (s *Server) gitOpsClusters(ctx context.Context, provider string) ([]string, error) {
	docs, err := s.list(ctx, store.Query{Parent: "/cluster-providers/" + provider, Kind: model.KindCluster,
		Fields: map[string]string{fieldGitOps: "true"}}, "the GitOps clusters of "+describe("/cluster-providers/"+provider))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.Name
	}
	return names, nil
}

func clusterMatches(in model.PlacementIntent) []model.ClusterMatch {
	out := slices.Clone(in.AnyOf)
	for _, a := range in.AllOf {
		if a.ClusterMatch != (model.ClusterMatch{}) {
			out = append(out, a.ClusterMatch)
		}
		out = append(out, a.AnyOf...)
	}
	return out
}

// builtin reports whether a registration (name, spec.host) means a built-in controller.
func (s *Server) builtin(name, host string) bool {
	for _, c := range s.Controllers {
		if c.Means(name, host) {
			return true
		}
	}
	return false
}

// emcoHint tells a user who names an EMCO controller temco does not run as a DIG's
// controller what to do instead.
func emcoHint(name, host string) string {
	for _, n := range []string{name, host} {
		switch n {
		case "nps", "sds", "its", "swc":
			return fmt.Sprintf(" (EMCO's %s is a sub-controller of dtc: register it in /v2/dtc-controllers and name dtc in the DIG's intents)", n)
		}
	}
	return " yet; register it with a taskQueue served by an external controller worker"
}
