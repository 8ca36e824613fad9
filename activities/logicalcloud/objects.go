package logicalcloud

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/model"
)

// cloud is everything a logical cloud's objects are made from.
type cloud struct {
	name        string
	spec        model.LogicalCloudSpec
	permissions map[string]model.UserPermissionSpec // by resource name
	quotas      []model.ClusterQuotaSpec
}

// objects renders what a standard or privileged cloud creates on each of its clusters:
// its namespace, a ResourceQuota merging the cluster quotas, and for each user permission
// a Role and RoleBinding in the namespace — or, for a cluster-wide permission (no
// namespace), a ClusterRole and ClusterRoleBinding. Names derive from the cloud's.
func (c cloud) objects(labels map[string]string) ([]appctx.Object, error) {
	ns := c.spec.Namespace
	var out []map[string]any
	meta := func(name, namespace string) map[string]any {
		m := map[string]any{"name": name, "labels": labels}
		if namespace != "" {
			m["namespace"] = namespace
		}
		return m
	}
	out = append(out, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns, "")})
	if len(c.quotas) > 0 {
		hard := map[string]any{}
		for _, q := range c.quotas {
			for k, v := range q {
				hard[k] = v
			}
		}
		out = append(out, map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": meta(c.name+"-quota", ns), "spec": map[string]any{"hard": hard}})
	}
	names := make([]string, 0, len(c.permissions))
	for n := range c.permissions {
		names = append(names, n)
	}
	sort.Strings(names)
	subject := []any{map[string]any{"kind": "User", "name": c.spec.User.UserName, "apiGroup": "rbac.authorization.k8s.io"}}
	for _, n := range names {
		p := c.permissions[n]
		if p.Namespace != "" && p.Namespace != ns {
			return nil, fmt.Errorf("user permission %q is for namespace %q: a logical cloud grants rights in its own namespace %q or cluster-wide (no namespace)", n, p.Namespace, ns)
		}
		rule := map[string]any{"apiGroups": orEmpty(p.APIGroups), "resources": p.Resources, "verbs": p.Verbs}
		role, binding, roleNS := "Role", "RoleBinding", ns
		if p.Namespace == "" {
			role, binding, roleNS = "ClusterRole", "ClusterRoleBinding", ""
		}
		name := c.name + "-" + n
		out = append(out,
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role, "metadata": meta(name, roleNS), "rules": []any{rule}},
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding, "metadata": meta(name, roleNS),
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
