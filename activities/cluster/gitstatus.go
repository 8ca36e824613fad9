// What temco knows of a GitOps cluster's reconcile: Flux's report, written to git by
// temco gitops-monitor beside the cluster. It is the cluster's readiness (?status=ready,
// the dashboard, a staged rollout's gates), never the operation's state: as in EMCO, a
// GitOps cluster's objects are Applied once committed.

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/gitops/layout"
	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// read reports the objects as the monitor last saw them, from the deployment's
// Kustomization inventory: present and ready by their own status, and never ready while
// Flux has not applied what git holds for the deployment (an update's objects may be
// there and Ready as the previous revision made them).
func (g *gitCluster) read(ctx context.Context, header *appctx.Context, placements []*appctx.ClusterApp, _ reading) lifecycle.ClusterResult {
	now := time.Now().UTC()
	var res lifecycle.ClusterResult
	v := g.view(ctx, header)
	for _, p := range placements {
		p.Live, p.LiveAt = make([]appctx.Live, len(p.Resources)), now
		for i, r := range p.Resources {
			if g.noSecrets && appctx.IsSecret(r.Kind) {
				// Not temco's to judge: nothing it committed holds the Secret. Not counted as
				// not ready either, or hooks waiting for readiness would wait for ever.
				p.Live[i] = appctx.Live{State: appctx.LiveOmitted, Error: fmt.Sprintf(secretUnseen, g.key)}
				continue
			}
			p.Live[i] = v.live(r.Ref)
			if p.Live[i].State == appctx.LivePresent {
				res.Done++
			}
			if !p.Live[i].Ready {
				res.NotReady++
			}
		}
	}
	return res
}

// secretUnseen is what a live read shows of a Secret left out of git.
const secretUnseen = "not committed to git (cluster %s keeps Secrets out of its repository): the cluster's report does not cover it"

// fluxView is what the cluster's monitor reports of one deployment.
type fluxView struct {
	unknown string // why nothing can be said of the objects; "": what follows holds
	seen    map[string]gitops.ResourceStatus
	// pending says why what Flux applied is not what git holds for the deployment ("": it is).
	pending string
}

// view reads the monitor's report of the deployment of header on this cluster.
func (g *gitCluster) view(ctx context.Context, header *appctx.Context) fluxView {
	if g.typ != syncobject.FluxCD {
		return fluxView{unknown: fmt.Sprintf("temco reads no status back from %s clusters: what git holds is not known to be applied", g.typ)}
	}
	reports, err := g.reports(ctx)
	if err != nil {
		return fluxView{unknown: "read the status reported through git: " + err.Error()}
	}
	if len(reports) == 0 {
		return fluxView{unknown: "no status reported on branch " + g.key + " (is temco gitops-monitor running beside the cluster's Flux?)"}
	}
	dep := g.base(header)
	ns, name := layout.KustomizationOf(dep)
	own, found := reports[ns+"/"+name]
	if !found {
		return fluxView{pending: fmt.Sprintf("Kustomization %s/%s does not exist yet (the cluster's bootstrap Kustomization has not applied it)", ns, name)}
	}
	v := fluxView{seen: map[string]gitops.ResourceStatus{}}
	if dep.BootstrapNamespaces { // its Namespaces are the bootstrap Kustomization's
		bns, bname := layout.BootstrapKustomization()
		for _, o := range reports[bns+"/"+bname].Resources {
			if o.Group == "" && o.Kind == "Namespace" {
				v.seen[refKey(o.Group, o.Kind, o.Namespace, o.Name)] = o
			}
		}
	}
	for _, o := range own.Resources {
		v.seen[refKey(o.Group, o.Kind, o.Namespace, o.Name)] = o
	}
	if v.pending, err = g.pending(ctx, dep, own); err != nil {
		return fluxView{unknown: "compare what Flux applied with git: " + err.Error()}
	}
	return v
}

// live is one object as the view shows it.
func (v fluxView) live(r appctx.Ref) appctx.Live {
	if v.unknown != "" {
		return appctx.Live{State: appctx.LiveUnknown, Error: v.unknown}
	}
	l := appctx.Live{State: appctx.LiveNotPresent}
	if o, ok := v.seen[refKey(r.Group, r.Kind, r.Namespace, r.Name)]; ok && o.Present {
		l = appctx.Live{State: appctx.LivePresent, Ready: o.Ready, Error: o.Message}
	}
	if v.pending != "" {
		l.Ready, l.Error = false, v.pending
	}
	return l
}

// pending says why the deployment's Kustomization (own) has not applied what git holds
// for it now — its folder and its Kustomization file as at the branch's head — or ""
// when it has. Commits of other deployments since do not matter. A refusal no reconcile
// mends (the build, or an object the API server refuses for what it is) says so.
func (g *gitCluster) pending(ctx context.Context, dep layout.Deployment, own gitops.KustomizationStatus) (string, error) {
	paths := layout.FluxPaths(dep)
	if own.LastAppliedRevision != "" { // "": it never applied anything (its first reconcile failed)
		if same, err := g.writer.SameAt(ctx, g.remote(), own.LastAppliedRevision, paths); err != nil || same {
			return "", err
		}
	}
	// A logical cloud's Kustomization reads the bootstrap source across namespaces, which
	// kustomize-controller --no-cross-namespace-refs=true forbids (Stalled, with no
	// revision tried): no reconcile mends it, temco writing the same source for every revision.
	refused := own.Ready == "False" && own.Reason == "AccessDenied"
	if !refused && own.Ready == "False" && own.LastAttemptedRevision != "" && fluxRefused(own.Reason, own.Message) {
		tried, err := g.writer.SameAt(ctx, g.remote(), own.LastAttemptedRevision, paths)
		if err != nil {
			return "", err
		}
		refused = tried
	}
	if refused {
		return "Flux refused what git holds for this deployment (no later reconcile applies it: change the deployment): " + describe(own), nil
	}
	return "Flux has not applied what git holds for this deployment yet: " + describe(own), nil
}

// reports reads every Kustomization status the cluster's monitor reported, by namespace/name.
func (g *gitCluster) reports(ctx context.Context) (map[string]gitops.KustomizationStatus, error) {
	files, _, err := g.writer.ReadDir(ctx, g.statusRemote(), gitops.StatusDir(g.key))
	if err != nil {
		return nil, err
	}
	out := make(map[string]gitops.KustomizationStatus, len(files))
	for path, b := range files {
		var k gitops.KustomizationStatus
		if err := json.Unmarshal(b, &k); err != nil {
			return nil, fmt.Errorf("status file %s: %w", path, err)
		}
		out[k.Namespace+"/"+k.Name] = k
	}
	return out, nil
}

// fluxWait bounds a wait for Flux: a source poll, a reconcile and its timeout, and the
// monitor's report, with room.
func (g *gitCluster) fluxWait() time.Duration {
	return min(max(2*(g.timers.Interval+g.timers.Timeout), 30*time.Second), 10*time.Minute)
}

// awaitCloudDeploymentsGone holds the removal of a standard or privileged logical cloud
// from a Flux cluster while the monitor still reports Kustomizations of the cloud's
// deployments (in its namespace): they are removed by Flux impersonating the cloud's
// ServiceAccount, which this removal deletes, and kustomize-controller leaves behind what
// it can no longer delete as that ServiceAccount (a privileged cloud's cluster-scoped
// objects). A deployment's terminate ends when git holds it, as in EMCO, so a script
// terminating a DIG then its cloud would otherwise race Flux. The wait is bounded
// (fluxWait), and none without a report: a monitor that never reported, or stopped, does
// not hold the cloud for ever.
func (g *gitCluster) awaitCloudDeploymentsGone(r *run) error {
	h := r.header
	if g.typ != syncobject.FluxCD || g.tenant != nil || !ofLogicalCloud(h) || len(r.placements()) == 0 {
		return nil
	}
	deadline := time.Now().Add(g.fluxWait())
	for {
		reports, err := g.reports(r.ctx)
		if err != nil {
			return fmt.Errorf("read the status cluster %s reports through git: %w", g.key, err)
		}
		var left []string
		for _, k := range reports {
			if k.Namespace == h.Namespace {
				left = append(left, k.Namespace+"/"+k.Name)
			}
		}
		if len(left) == 0 {
			return nil
		}
		slices.Sort(left)
		why := fmt.Sprintf("Flux has not removed the Kustomizations of the logical cloud's deployments yet: %s", strings.Join(left, ", "))
		if time.Now().After(deadline) {
			activity.GetLogger(r.ctx).Warn("removing a logical cloud from a GitOps cluster before Flux removed its deployments", "cluster", g.key, "reason", why)
			return nil
		}
		r.heartbeat(why)
		if err := sleep(r.ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

// fluxDryRun finds the reason Flux's server-side apply reports a dry run failed for
// ("Deployment/default/web dry-run failed (Invalid): ...").
var fluxDryRun = regexp.MustCompile(`dry-run failed \((\w+)\)`)

// fluxRefused tells a Kustomization failure no retry mends — the build of its files, or
// an object the API server refuses for what it is (as permanent tells them for the
// clusters temco reaches) — from one a later reconcile may pass.
func fluxRefused(reason, message string) bool {
	switch {
	case reason == "BuildFailed":
		return true
	case reason != "ReconciliationFailed":
		return false
	case strings.Contains(message, "failed to create typed patch object") || strings.Contains(message, "namespace not specified"):
		return true
	}
	m := fluxDryRun.FindStringSubmatch(message)
	if m == nil {
		return false
	}
	switch metav1.StatusReason(m[1]) {
	case metav1.StatusReasonInvalid, metav1.StatusReasonBadRequest, metav1.StatusReasonNotFound, metav1.StatusReasonMethodNotAllowed,
		metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonUnsupportedMediaType, metav1.StatusReasonGone, metav1.StatusReasonNotAcceptable:
		return true
	case metav1.StatusReasonForbidden:
		return !strings.Contains(message, "because it is being terminated")
	}
	return false
}

func describe(k gitops.KustomizationStatus) string {
	s := fmt.Sprintf("Kustomization %s/%s: Ready=%s", k.Namespace, k.Name, k.Ready)
	if k.Reason != "" {
		s += " " + k.Reason
	}
	if k.Message != "" {
		s += ": " + k.Message
	}
	if k.LastAppliedRevision != "" {
		s += "; last applied " + k.LastAppliedRevision
	}
	return s
}

func refKey(group, kind, ns, name string) string {
	return strings.Join([]string{group, kind, ns, name}, "/")
}
