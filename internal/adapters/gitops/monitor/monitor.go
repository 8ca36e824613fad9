// Package monitor is temco gitops-monitor: it runs beside a cluster temco reaches only
// through git and writes what the cluster's Flux Kustomizations report, and the state of
// the objects they applied, to the cluster's status branch (gitops.StatusBranch), where
// temco's workers read it.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/core/readiness"
)

// kustomizations is Flux's Kustomization (kustomize.toolkit.fluxcd.io/v1).
var kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

// resync bounds how long a pass trusts its memory of the last write: past it a pass
// writes again (no commit when the branch still holds it), so that a status branch
// deleted or rewritten by hand is repaired even on an idle cluster.
const resync = 10 * time.Minute

// Monitor reports the status of one cluster's Flux Kustomizations to git. Use one
// Monitor per cluster; its methods are not safe for concurrent use.
type Monitor struct {
	Kube     *rest.Config   // the cluster
	Git      *gitops.Writer // its Dir is the monitor's own
	Remote   gitops.Remote  // the status branch: Branch is gitops.StatusBranch(Cluster)
	Cluster  string         // "<provider>+<cluster>"
	Interval time.Duration  // between passes of Run
	Log      *slog.Logger   // nil: slog.Default()

	client    dynamic.Interface
	disco     discovery.DiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	written   map[string][]byte // the status files of the last successful write
	facts     map[string][]byte // the facts files of the last write that wrote them
	writtenAt time.Time
	docs      map[string]schemaDoc // the OpenAPI documents, by their URL (which has their hash)
}

// Run makes a pass every Interval until ctx ends. A failed pass (apiserver or git
// unreachable) is logged and made again at the next interval.
func (m *Monitor) Run(ctx context.Context) error {
	if m.Interval <= 0 {
		return errors.New("gitops monitor: the interval must be positive")
	}
	if err := m.connect(); err != nil {
		return err
	}
	m.log().Info("gitops monitor started", "cluster", m.Cluster, "remote", m.Remote, "interval", m.Interval)
	tick := time.NewTicker(m.Interval)
	defer tick.Stop()
	for {
		wrote, err := m.Pass(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			m.log().Warn("status pass failed; retrying at the next interval", "cluster", m.Cluster, "err", err)
		case wrote:
			m.log().Info("status written", "cluster", m.Cluster, "remote", m.Remote)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Pass reads every Kustomization of the cluster and the objects of their inventories,
// and commits their status files when they differ from what was last written; wrote
// tells whether a commit was made.
func (m *Monitor) Pass(ctx context.Context) (wrote bool, err error) {
	if err := m.connect(); err != nil {
		return false, err
	}
	list, err := m.client.Resource(kustomizations).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("list the Flux Kustomizations of %s: %w", m.Cluster, err)
	}
	files := make(map[string][]byte, len(list.Items))
	reset := false // one discovery refresh per pass at most
	for i := range list.Items {
		st, bad := kustomizationStatus(&list.Items[i])
		if len(bad) > 0 {
			m.log().Warn("unreadable inventory entries skipped", "cluster", m.Cluster,
				"kustomization", st.Namespace+"/"+st.Name, "ids", bad)
		}
		for j := range st.Resources {
			if err := m.observe(ctx, &st.Resources[j], &reset); err != nil {
				return false, err
			}
		}
		b, err := statusFile(st)
		if err != nil {
			return false, err
		}
		files[gitops.StatusPath(m.Cluster, st.Namespace, st.Name)] = b
	}
	facts, err := m.factFiles(ctx)
	if err != nil { // the status goes out all the same; the facts at a later pass
		m.log().Warn("cluster facts not read", "cluster", m.Cluster, "err", err)
	}
	return m.write(ctx, files, facts)
}

// write commits files as the whole status directory (a Kustomization gone loses its
// file), and facts (nil: not read) as the whole facts directory, unless they are what the
// last writes already put there.
func (m *Monitor) write(ctx context.Context, files, facts map[string][]byte) (bool, error) {
	fresh := time.Since(m.writtenAt) < resync
	sameStatus := m.written != nil && fresh && maps.EqualFunc(files, m.written, bytesEqual)
	sameFacts := facts == nil || (m.facts != nil && fresh && maps.EqualFunc(facts, m.facts, bytesEqual))
	if sameStatus && sameFacts {
		return false, nil
	}
	change := gitops.Change{Replace: []string{gitops.StatusDir(m.Cluster)}, Files: maps.Clone(files), CreateBranch: true,
		Message: "temco gitops-monitor: status of " + m.Cluster}
	if !sameFacts { // a few megabytes of schemas: written only when they change
		change.Replace = append(change.Replace, gitops.FactsDir(m.Cluster))
		maps.Copy(change.Files, facts)
	}
	res, err := m.Git.Commit(ctx, m.Remote, change)
	if err != nil {
		return false, fmt.Errorf("write the status of %s to %s: %w", m.Cluster, m.Remote, err)
	}
	m.written, m.writtenAt = files, time.Now()
	if !sameFacts {
		m.facts = facts
	}
	return res.Changed, nil
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// observe looks the object r names up on the cluster. What the apiserver answers about
// one object (absent, forbidden, a kind it does not serve) is that object's status; an
// apiserver that does not answer fails the pass, rather than reporting every object as
// unreachable.
func (m *Monitor) observe(ctx context.Context, r *gitops.ResourceStatus, reset *bool) error {
	gk := schema.GroupKind{Group: r.Group, Kind: r.Kind}
	mapping, err := m.mapper.RESTMapping(gk, r.Version)
	if meta.IsNoMatchError(err) && !*reset {
		// The discovery cache predates a definition installed since: read it again.
		m.mapper.Reset()
		*reset = true
		mapping, err = m.mapper.RESTMapping(gk, r.Version)
	}
	if meta.IsNoMatchError(err) {
		r.Message = fmt.Sprintf("the cluster does not serve %s", schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind})
		return nil
	}
	if err != nil {
		return fmt.Errorf("map %s of %s: %w", gk, m.Cluster, err)
	}
	ri := m.client.Resource(mapping.Resource)
	var get dynamic.ResourceInterface = ri
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		get = ri.Namespace(r.Namespace)
	}
	u, err := get.Get(ctx, r.Name, metav1.GetOptions{})
	var status apierrors.APIStatus
	switch {
	case err == nil:
		r.Present, r.Ready = true, readiness.Ready(u)
	case apierrors.IsNotFound(err):
	case errors.As(err, &status):
		r.Message = shortMessage(err.Error())
	default:
		return fmt.Errorf("get %s %s/%s on %s: %w", gk, r.Namespace, r.Name, m.Cluster, err)
	}
	return nil
}

// connect makes the cluster's clients once.
func (m *Monitor) connect() error {
	if m.client != nil {
		return nil
	}
	if m.Kube == nil || m.Git == nil || m.Cluster == "" {
		return errors.New("gitops monitor: Kube, Git and Cluster must be set")
	}
	client, err := dynamic.NewForConfig(m.Kube)
	if err != nil {
		return fmt.Errorf("client of %s: %w", m.Cluster, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(m.Kube)
	if err != nil {
		return fmt.Errorf("discovery client of %s: %w", m.Cluster, err)
	}
	m.client, m.disco, m.mapper = client, disc, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return nil
}

func (m *Monitor) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.Default()
}
