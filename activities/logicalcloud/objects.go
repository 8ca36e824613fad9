package logicalcloud

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/adapters/gitops/layout"
	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/model"
)

// cloud is everything a logical cloud's objects are made from.
type cloud struct {
	project     string
	name        string
	spec        model.LogicalCloudSpec
	permissions map[string]model.UserPermissionSpec // by resource name
	quotas      map[string]model.ClusterQuotaSpec   // by resource name
}

// user is the name the cloud's credential and role bindings carry: spec.user.userName,
// else a default, as dcm requires no user (it then issues nameless ones, which clusters
// refuse). The project keeps same-named clouds of two projects from sharing rights, and
// the length (over dcm's 20 characters) keeps it apart from any name a user may give.
func (c cloud) user() string {
	if c.spec.User.UserName != "" {
		return c.spec.User.UserName
	}
	return "temco:logical-cloud:" + c.project + ":" + c.name
}

// serviceAccount is the cloud's ServiceAccount on Flux clusters, in its namespace: the
// identity Flux impersonates to apply the cloud's deployments there. EMCO's name,
// <cloud>-sa, as dcm's role bindings and rsync's Kustomization name it (dcm itself
// creates <namespace>-sa, which matches them only when the namespace is named after the cloud).
func (c cloud) serviceAccount() string { return c.name + "-sa" }

// repoSync is the name of the cloud's RepoSync on Anthos clusters, EMCO's.
func (c cloud) repoSync() string { return "repo-sync-" + c.name }

// reconcilerNamespace holds Config Sync's reconcilers' ServiceAccounts.
const reconcilerNamespace = "config-management-system"

// reconciler is the ServiceAccount Config Sync runs the cloud's RepoSync as, in
// reconcilerNamespace: ns-reconciler-<namespace>-<RepoSync>-<length of its name>, Config
// Sync's naming for a RepoSync not named repo-sync, which dcm's role bindings name.
func (c cloud) reconciler() string {
	return fmt.Sprintf("ns-reconciler-%s-%s-%d", c.spec.Namespace, c.repoSync(), len(c.repoSync()))
}

// account is the cloud's identity on a GitOps cluster, which its role bindings name
// besides its user and its deployments there are applied as: on fluxcd its ServiceAccount
// (Flux impersonates it), on anthos the reconciler of its RepoSync.
func (c cloud) account(on *cluster.GitOpsAccess) (namespace, name string, err error) {
	switch on.Type {
	case syncobject.FluxCD:
		return c.spec.Namespace, c.serviceAccount(), nil
	case syncobject.Anthos:
		return reconcilerNamespace, c.reconciler(), nil
	}
	return "", "", fmt.Errorf("cluster %s: standard and privileged logical clouds are set up only on fluxcd and anthos GitOps clusters, not %s", on.Key, on.Type)
}

// objects renders what a standard or privileged cloud creates on each of its clusters,
// as dcm does: its namespace (with the cloud's labels), a ResourceQuota per cluster
// quota, and for each user permission a Role and RoleBinding in the permission's
// namespace (the cloud's or another, e.g. kube-system) — or, for a cluster-wide
// permission (no namespace), a ClusterRole and ClusterRoleBinding. Names derive from the
// cloud's and the permission's (dcm numbers them by their order in its database).
//
// On a GitOps cluster (on, nil for a cluster reached with its kubeconfig), where no
// certificate is issued, dcm binds every role to the cloud's account there besides the
// user (account). On fluxcd dcm adds that ServiceAccount (after the namespace). On anthos
// Config Sync creates it for the cloud's RepoSync, which rsync's anthos plugin writes
// with the cloud's set-up (after the namespace here): it reads the folder the cloud's
// deployments are committed to.
func (c cloud) objects(labels map[string]string, on *cluster.GitOpsAccess) ([]appctx.Object, error) {
	ns := c.spec.Namespace
	var out []map[string]any
	meta := func(name, namespace string, extra map[string]string) map[string]any {
		l := map[string]string{}
		for k, v := range extra {
			l[k] = v
		}
		for k, v := range labels {
			l[k] = v
		}
		m := map[string]any{"name": name, "labels": l}
		if namespace != "" {
			m["namespace"] = namespace
		}
		return m
	}
	out = append(out, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns, "", c.spec.Labels)})
	subject := []any{map[string]any{"kind": "User", "name": c.user(), "apiGroup": "rbac.authorization.k8s.io"}}
	if on != nil {
		accountNS, account, err := c.account(on)
		if err != nil {
			return nil, err
		}
		subject = append(subject, map[string]any{"kind": "ServiceAccount", "name": account, "namespace": accountNS})
		switch on.Type {
		case syncobject.FluxCD:
			out = append(out, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(account, ns, c.spec.Labels)})
		case syncobject.Anthos:
			out = append(out, c.repoSyncObject(meta(c.repoSync(), ns, nil), on))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(c.quotas)) {
		out = append(out, map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": meta(n, ns, nil), "spec": map[string]any{"hard": c.quotas[n]}})
	}
	for _, n := range slices.Sorted(maps.Keys(c.permissions)) {
		p := c.permissions[n]
		rule := map[string]any{"apiGroups": orEmpty(p.APIGroups), "resources": p.Resources, "verbs": p.Verbs}
		role, binding := "Role", "RoleBinding"
		if p.Namespace == "" {
			role, binding = "ClusterRole", "ClusterRoleBinding"
		}
		name := c.name + "-" + n
		out = append(out,
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role, "metadata": meta(name, p.Namespace, nil), "rules": []any{rule}},
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding, "metadata": meta(name, p.Namespace, nil),
				"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name}, "subjects": subject})
	}
	objs := make([]appctx.Object, 0, len(out))
	for _, o := range out {
		data, err := json.Marshal(o) // map keys sorted: canonical
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		m := o["metadata"].(map[string]any)
		namespace, _ := m["namespace"].(string)
		group, version := splitAPIVersion(o["apiVersion"].(string))
		objs = append(objs, appctx.Object{Ref: appctx.Ref{Group: group, Version: version, Kind: o["kind"].(string),
			Namespace: namespace, Name: m["name"].(string)}, Manifest: string(data), Hash: hex.EncodeToString(sum[:])})
	}
	return objs, nil
}

// repoSyncObject is the cloud's RepoSync on an anthos cluster, as rsync's anthos plugin
// writes it: Config Sync's reconciler for the cloud's namespace syncs, from the cluster's
// repository and branch, the folder the cloud's deployments on that cluster are committed
// to (layout.RepoSyncDir, with EMCO's leading slash). Its auth is none, as EMCO writes it:
// the repository must be readable without credentials (the token stays out of git).
func (c cloud) repoSyncObject(meta map[string]any, on *cluster.GitOpsAccess) map[string]any {
	return map[string]any{"apiVersion": "configsync.gke.io/v1beta1", "kind": "RepoSync", "metadata": meta,
		"spec": map[string]any{"git": map[string]any{"repo": on.URL, "branch": on.Branch, "revision": "HEAD",
			"dir": "/" + layout.RepoSyncDir(c.spec.Namespace, on.Key), "auth": "none", "noSSLVerify": false}}}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{""} // the core API group
	}
	return s
}

func splitAPIVersion(av string) (group, version string) {
	for i := len(av) - 1; i >= 0; i-- {
		if av[i] == '/' {
			return av[:i], av[i+1:]
		}
	}
	return "", av
}
