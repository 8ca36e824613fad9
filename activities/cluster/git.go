// Reaching a cluster through git (GitOps): the cluster's desired state is committed to the
// repository its Flux controllers (or Config Sync, or Azure Arc's Flux) pull from; an
// operation is done once git holds it. Flux's report comes back through the same
// repository, written by temco gitops-monitor next to the cluster (gitstatus.go).

package cluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/gitops/layout"
	"github.com/temco/temco/internal/adapters/kubeschema"
	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// gitOpsField marks a cluster registered with spec.gitOps (set by the api).
const gitOpsField = "gitOps"

// gitCluster is a cluster reached through git.
type gitCluster struct {
	key     string // provider+cluster: verbatim in the repository's paths and the status branch, as EMCO
	typ     string // syncobject.FluxCD, AzureArcV2 or Anthos
	git     syncobject.Git
	timers  syncobject.Timers
	writer  *gitops.Writer
	schemas *Schemas
	// noSecrets: the cluster's Secrets stay out of git (spec.gitOps.gitOpsSecrets: omit).
	noSecrets bool
	// tenant is the ServiceAccount of the standard or privileged logical cloud the
	// context deploys into (its credential on this cluster: on fluxcd the one its
	// Kustomizations impersonate, on anthos the reconciler of its RepoSync), nil for admin
	// clouds and logical clouds' own set-up: the cluster's GitOps agent then applies with
	// its own rights.
	tenant *layout.ServiceAccount
}

// cloudAccountKind marks a logical cloud's credential on a GitOps cluster: the
// ServiceAccount its deployments are applied as (Flux's Kustomizations impersonate it;
// on anthos Config Sync's reconciler of the cloud's RepoSync is it). Nothing secret:
// temco issues no certificate there (as dcm issues no CSR for GitOps clusters), and the
// GitOps agent holds the rights.
const cloudAccountKind = "ServiceAccount"

type cloudAccount struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// CloudAccountCredential is what a logical cloud keeps as its credential on a GitOps
// cluster: the namespace and name of its ServiceAccount there.
func CloudAccountCredential(namespace, name string) []byte {
	b, _ := json.Marshal(cloudAccount{Kind: cloudAccountKind, Namespace: namespace, Name: name})
	return b
}

// cloudAccountOf reads a credential written by CloudAccountCredential (a kubeconfig is not one).
func cloudAccountOf(raw []byte) (*layout.ServiceAccount, bool) {
	var a cloudAccount
	if json.Unmarshal(raw, &a) != nil || a.Kind != cloudAccountKind || a.Namespace == "" || a.Name == "" {
		return nil, false
	}
	return &layout.ServiceAccount{Namespace: a.Namespace, Name: a.Name}, true
}

// IsCloudAccountCredential tells a logical cloud's credential on a GitOps cluster from
// an issued kubeconfig.
func IsCloudAccountCredential(raw []byte) bool {
	_, ok := cloudAccountOf(raw)
	return ok
}

// GitOpsAccess is how a GitOps cluster's agent reads the repository temco commits to.
type GitOpsAccess struct {
	Key               string // provider+cluster, as in the repository's paths
	Type, URL, Branch string // syncobject.FluxCD, AzureArcV2 or Anthos; the clone URL; the branch
}

// GitOpsAccess returns how cluster key is reached through git, nil for a cluster reached
// with its kubeconfig. What cannot work without the user's change is a permanent error.
func (c *Clients) GitOpsAccess(ctx context.Context, key string) (*GitOpsAccess, error) {
	doc, err := c.clusterDoc(ctx, key)
	if err != nil || doc.Fields[gitOpsField] != "true" {
		return nil, err
	}
	g, err := c.gitCluster(ctx, key, doc)
	if err != nil {
		return nil, err
	}
	return &GitOpsAccess{Key: key, Type: g.typ, URL: g.git.URL, Branch: g.git.Branch}, nil
}

// gitCluster reads a GitOps cluster's access from its registration and sync objects;
// what cannot work without the user's change is a permanent error.
func (c *Clients) gitCluster(ctx context.Context, key string, doc *store.Doc) (*gitCluster, error) {
	spec, err := model.Decode[model.ClusterSpec](doc.Body)
	if err != nil {
		return nil, err
	}
	g := spec.Spec.GitOps
	typ, ok := syncobject.Type(g.GitOpsType)
	if !ok {
		return nil, permanentf("cluster %q: gitOpsType %q is not supported", key, g.GitOpsType)
	}
	if c.Git == nil {
		return nil, permanentf("cluster %q is reached through GitOps, but this worker has no git cache directory", key)
	}
	provider, _ := lifecycle.SplitClusterKey(key)
	ref, err := c.syncObject(ctx, provider, g.GitOpsReferenceObject)
	if err != nil {
		return nil, err
	}
	access, err := syncobject.GitOf(ref)
	if err != nil {
		return nil, permanentf("cluster %q: gitOpsReferenceObject %q: %v", key, g.GitOpsReferenceObject, err)
	}
	timers, err := syncobject.TimersOf(nil)
	if g.GitOpsResourceObject != "" {
		res, rerr := c.syncObject(ctx, provider, g.GitOpsResourceObject)
		if rerr != nil {
			return nil, rerr
		}
		if timers, err = syncobject.TimersOf(res); err != nil {
			return nil, permanentf("cluster %q: gitOpsResourceObject %q: %v", key, g.GitOpsResourceObject, err)
		}
	}
	return &gitCluster{key: key, typ: typ, git: access, timers: timers, writer: c.Git, schemas: &c.Schemas,
		noSecrets: g.GitOpsSecrets == model.GitOpsSecretsOmit}, nil
}

// syncObject reads a cluster sync object's values, its secret ones opened.
func (c *Clients) syncObject(ctx context.Context, provider, name string) (map[string]string, error) {
	doc, err := c.Store.Get(ctx, "/cluster-providers/"+provider+"/cluster-sync-objects/"+name)
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, permanentf("cluster sync object %q of provider %q does not exist", name, provider)
	}
	if err != nil {
		return nil, err
	}
	kv, err := model.Decode[model.KVSpec](doc.Body)
	if err != nil {
		return nil, err
	}
	var secrets map[string]string
	if len(doc.Secret) > 0 {
		plain, err := c.Keys.Open(doc.Secret, []byte(doc.ID))
		if err != nil {
			return nil, permanentf("cluster sync object %q: its secret values cannot be decrypted with the configured keys", name)
		}
		if err := json.Unmarshal(plain, &secrets); err != nil {
			return nil, err
		}
	}
	return syncobject.Values(kv.Spec.KV, secrets), nil
}

func (g *gitCluster) remote() gitops.Remote {
	return gitops.Remote{URL: g.git.URL, Branch: g.git.Branch, User: g.git.User, Token: g.git.Token}
}

// statusRemote is the branch the cluster's monitor reports on, named after the cluster (EMCO's).
func (g *gitCluster) statusRemote() gitops.Remote {
	r := g.remote()
	r.Branch = g.key
	return r
}

// apply commits every app placed on the cluster.
func (g *gitCluster) apply(r *run) error {
	verb := lifecycle.OpInstantiate
	if r.previous {
		verb = cmp.Or(r.header.Op, lifecycle.OpUpdate)
	}
	all := map[string][]int{}
	for _, p := range r.placements() {
		for i := range p.Resources {
			all[p.App] = append(all[p.App], i)
		}
	}
	p := &placed{header: r.header, placements: r.placements(), apps: r.apps}
	dep := g.deployment(p)
	warnings, err := g.prune(r.ctx, p, &dep)
	if err != nil {
		return r.refused(all, err)
	}
	warnings = g.withoutSecrets(&dep, warnings)
	return g.sync(r, dep, message(verb, r.header, g.key), all, lifecycle.ResApplied, warnings)
}

// remove commits the cluster's deployment without the objects that go (everything, or
// next's content in an update).
func (g *gitCluster) remove(r *run, only map[string][]int, next *placed) error {
	msg := ""
	if next == nil {
		msg, next = message(lifecycle.OpTerminate, r.header, g.key), &placed{header: r.header}
		if err := g.awaitCloudDeploymentsGone(r); err != nil {
			return err
		}
	} else { // the prune of an update: named after the revision that follows
		msg = message(cmp.Or(next.header.Op, lifecycle.OpUpdate), next.header, g.key)
	}
	if only == nil {
		only = map[string][]int{}
		for _, p := range r.placements() {
			for i, res := range p.Resources {
				if res.Status != lifecycle.ResDeleted {
					only[p.App] = append(only[p.App], i)
				}
			}
		}
	}
	dep := g.deployment(next)
	if _, err := g.prune(r.ctx, next, &dep); err != nil { // what stays is committed as the apply committed it
		return r.refused(only, err)
	}
	g.withoutSecrets(&dep, nil)
	return g.sync(r, dep, msg, only, lifecycle.ResDeleted, nil)
}

// sync commits the deployment's files (one commit, none when git already holds them) and
// settles the objects in which to status: as in EMCO, an object on a GitOps cluster is
// Applied (or Deleted) once committed, so an operation ends when git holds it. What Flux
// makes of the commit is the cluster's readiness (read), which a staged rollout's gates
// wait for. A push the repository refuses (credentials, a protected branch) fails those
// objects: retrying cannot fix it, and nothing was committed.
func (g *gitCluster) sync(r *run, dep layout.Deployment, msg string, which map[string][]int, status string, warnings map[string][]string) error {
	if err := g.keepNamespacesInFolder(r.ctx, &dep); err != nil {
		return r.refused(which, err)
	}
	change, err := layout.For(g.typ, dep)
	if err != nil {
		return permanentErr{err}
	}
	change.Message = msg
	out, err := g.writer.Commit(r.ctx, g.remote(), change)
	if err != nil {
		return r.refused(which, err)
	}
	r.heartbeat("committed " + out.Commit)
	for app, idx := range which {
		p := r.byApp[app]
		if p == nil {
			continue
		}
		for _, i := range idx {
			res, warning := &p.Resources[i], ""
			if status == lifecycle.ResApplied {
				r.mu.Lock()
				res.Namespace = layout.NamespaceOf(dep, res.Group, res.Kind, res.Namespace)
				r.mu.Unlock()
				if i < len(warnings[app]) {
					warning = warnings[app][i]
				}
			}
			r.settleWarned(res, status, "", warning)
		}
	}
	return r.progress(r.ctx)
}

// keepNamespacesInFolder keeps a logical cloud's Namespace in its folder when git holds it
// there (a cloud set up before temco committed it with the cloud's Kustomization): moved,
// the cloud's Kustomization could prune it, everything in it with it, before the bootstrap
// Kustomization applied it.
func (g *gitCluster) keepNamespacesInFolder(ctx context.Context, dep *layout.Deployment) error {
	if !dep.BootstrapNamespaces || g.typ != syncobject.FluxCD {
		return nil
	}
	files, _, err := g.writer.ReadDir(ctx, g.remote(), layout.Folder(g.typ, *dep))
	if err != nil {
		return err
	}
	for path := range files {
		if strings.HasSuffix(path, "+Namespace.yaml") {
			dep.BootstrapNamespaces = false
		}
	}
	return nil
}

// refused fails the objects at the indices of which when err is one no retry mends — the
// git server refused the credentials or the push, the schema the cluster reports cannot
// be read — and saves their statuses; any other error is returned, for Temporal to retry
// the activity.
func (r *run) refused(which map[string][]int, err error) error {
	var permanent permanentErr
	if !gitops.IsPermanent(err) && !errors.As(err, &permanent) {
		return err
	}
	// Said in the worker's log too: the objects' statuses hold it, but an operator reading
	// why an operation failed looks here first.
	activity.GetLogger(r.ctx).Warn("GitOps cluster refused the change for good: its objects fail", "context", r.header.ID, "error", err.Error())
	r.forEach(which, func(res *appctx.ResourceStatus) { r.setFailed(res, err.Error()) })
	return r.progress(r.ctx)
}

// message is a commit's message: the operation, DIG (or logical cloud), revision and cluster.
func message(op string, h *appctx.Context, cluster string) string {
	what := "deployment intent group"
	if ofLogicalCloud(h) {
		what = "logical cloud"
	}
	return fmt.Sprintf("temco: %s of %s %s, revision %d, on cluster %s", op, what, h.DIG, h.Revision, cluster)
}

// ofLogicalCloud tells a logical cloud's own context (its objects on its clusters).
func ofLogicalCloud(h *appctx.Context) bool {
	return strings.Contains(h.DIG, "/logical-clouds/") && !strings.Contains(h.DIG, "/deployment-intent-groups/")
}

// deployment is the layout's view of what a context places on this cluster.
func (g *gitCluster) deployment(p *placed) layout.Deployment {
	d := g.base(p.header)
	d.Flux = layout.FluxOptions{Interval: g.timers.Interval, RetryInterval: g.timers.RetryInterval, Timeout: g.timers.Timeout}
	for _, pl := range p.placements {
		app := layout.App{Name: pl.App}
		for _, o := range p.apps[pl.App].Objects {
			app.Objects = append(app.Objects, layout.Object{Group: o.Group, Version: o.Version, Kind: o.Kind,
				Namespace: o.Namespace, Name: o.Name, Manifest: []byte(o.Manifest)})
		}
		d.Apps = append(d.Apps, app)
	}
	return d
}

// base is the layout's view of a context's deployment on this cluster, without its apps.
// A logical cloud's set-up has its namespace applied by the bootstrap Kustomization, which
// applies its deployments' Kustomizations in that namespace too.
func (g *gitCluster) base(h *appctx.Context) layout.Deployment {
	return layout.Deployment{Cluster: g.key, Instance: h.Instance, Namespace: h.Namespace, Tenant: g.tenant,
		BootstrapNamespaces: ofLogicalCloud(h) && g.tenant == nil}
}

// prune drops from the deployment's objects the fields the cluster's schema does not
// declare, as its monitor reported the schema (Flux's server-side apply would refuse them,
// and the whole Kustomization with them), and returns the warning of each object, per app
// and index. Without a report (a monitor that does not write facts) nothing is dropped.
func (g *gitCluster) prune(ctx context.Context, p *placed, dep *layout.Deployment) (map[string][]string, error) {
	if len(dep.Apps) == 0 {
		return nil, nil
	}
	b, _, err := g.writer.ReadFile(ctx, g.statusRemote(), gitops.FactsPath(g.key))
	if err != nil || b == nil {
		return nil, err
	}
	var facts gitops.Facts
	if err := json.Unmarshal(b, &facts); err != nil {
		return nil, fmt.Errorf("the facts cluster %s reports through git: %w", g.key, err)
	}
	crds := definitions(p)
	warnings := map[string][]string{}
	for ai := range dep.Apps {
		app := &dep.Apps[ai]
		objs := p.apps[app.Name].Objects
		warnings[app.Name] = make([]string, len(app.Objects))
		for oi := range app.Objects {
			o := &objs[oi]
			// A definition committed with the object is what the cluster will hold: its
			// schema, else the cluster's own.
			key, load := "", func() ([]byte, error) { return nil, nil }
			if crd := crds[schema.GroupKind{Group: o.Group, Kind: o.Kind}]; crd != nil {
				key, load = "crd:"+crd.Hash, func() ([]byte, error) { return crdDocument(crd) }
			} else if sum := facts.Schemas[groupVersionPath(o.Group, o.Version)]; sum != "" {
				key, load = "sha256:"+sum, func() ([]byte, error) { return g.schemaDoc(ctx, sum) }
			} else {
				continue
			}
			pr, err := g.schemas.prune(key, o, load)
			if err != nil {
				return nil, err
			}
			if pr.Body != nil {
				app.Objects[oi].Manifest = pr.Body
			}
			warnings[app.Name][oi] = dropWarning(pr.Dropped)
		}
	}
	return warnings, nil
}

// secretOmitted is the warning of a Secret left out of git: it shows Applied, as temco
// did all it was asked to, and says that nothing put it on the cluster.
const secretOmitted = "not committed to git: cluster %s keeps Secrets out of its repository (spec.gitOps.gitOpsSecrets: omit), so temco did not create it; create it on the cluster otherwise"

// withoutSecrets takes the Secrets out of dep when the cluster keeps them out of git,
// after prune (whose objects are index-aligned with the apps'), and returns warnings
// (per app and object index, as prune's) with each one's secretOmitted.
func (g *gitCluster) withoutSecrets(dep *layout.Deployment, warnings map[string][]string) map[string][]string {
	if !g.noSecrets {
		return warnings
	}
	for ai := range dep.Apps {
		app := &dep.Apps[ai]
		var kept []layout.Object
		for oi, o := range app.Objects {
			if !appctx.IsSecret(o.Kind) {
				kept = append(kept, o)
				continue
			}
			if warnings == nil {
				warnings = map[string][]string{}
			}
			if len(warnings[app.Name]) < len(app.Objects) {
				warnings[app.Name] = append(warnings[app.Name], make([]string, len(app.Objects)-len(warnings[app.Name]))...)
			}
			warnings[app.Name][oi] = fmt.Sprintf(secretOmitted, g.key)
		}
		app.Objects = kept
	}
	return warnings
}

// definitions indexes the CustomResourceDefinitions of a deployment by the kind they define.
func definitions(p *placed) map[schema.GroupKind]*appctx.Object {
	out := map[schema.GroupKind]*appctx.Object{}
	for _, pl := range p.placements {
		objs := p.apps[pl.App].Objects
		for i := range objs {
			if objs[i].Kind != "CustomResourceDefinition" || objs[i].Group != "apiextensions.k8s.io" {
				continue
			}
			var crd struct {
				Spec struct {
					Group string
					Names struct{ Kind string }
				}
			}
			if json.Unmarshal([]byte(objs[i].Manifest), &crd) == nil && crd.Spec.Group != "" {
				out[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = &objs[i]
			}
		}
	}
	return out
}

func crdDocument(crd *appctx.Object) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(crd.Manifest), &m); err != nil {
		return nil, err
	}
	return kubeschema.CRDDocument(m)
}

// schemaDoc reads the OpenAPI document the cluster's monitor wrote under its sha256.
func (g *gitCluster) schemaDoc(ctx context.Context, sum string) ([]byte, error) {
	b, _, err := g.writer.ReadFile(ctx, g.statusRemote(), gitops.SchemaPath(g.key, sum))
	if err != nil {
		return nil, err
	}
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("the OpenAPI schema %s cluster %s reports through git is missing or altered", sum, g.key)
	}
	return b, nil
}

// forEach calls fn for the objects at the indices of which, per app.
func (r *run) forEach(which map[string][]int, fn func(res *appctx.ResourceStatus)) {
	for app, idx := range which {
		p := r.byApp[app]
		if p == nil {
			continue
		}
		for _, i := range idx {
			fn(&p.Resources[i])
		}
	}
}
