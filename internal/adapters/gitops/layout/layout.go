// Package layout computes what temco commits for one deployment on one GitOps cluster:
// the files of a deployment intent group's objects on the cluster, laid out as EMCO's
// rsync lays them out, and for Flux the Kustomization that applies them.
//
// For cluster <c> ("<provider>+<cluster>") and deployment instance <i> (the context that
// instantiated the deployment intent group: stable across updates, so one folder and one
// Kustomization serve the deployment for its whole life):
//
//	clusters/<c>/context/<i>/app/<app>/<name>+<Kind>.yaml  one file per object (all types)
//	clusters/<c>/kust<i>.yaml                              its Flux Kustomization (fluxcd)
//	clusters/<c>/context/kustomization.yaml                keeps the cluster's bootstrap
//	                                                       Kustomization out of context/ (fluxcd)
//	clusters/<c>/context/<i>/deployed                      the apps deployed (anthos)
//
// A deployment into a standard or privileged logical cloud (Deployment.Tenant) is
// applied with the cloud's rights only. On fluxcd its Kustomization lives in the cloud's
// namespace, impersonating the cloud's ServiceAccount there. On anthos its files go where
// the cloud's RepoSync reads, namespaces/<ns>/<c>/context/<i>/ (EMCO's path), which
// Config Sync's reconciler for that namespace applies with the rights the cloud's role
// bindings give its ServiceAccount.
//
// Every change replaces the deployment's folder and files whole, so a commit removes
// what an update dropped, and a deployment with no apps left removes them all.
package layout

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/syncobject"
)

// Deployment is what one deployment intent group places on one GitOps cluster.
type Deployment struct {
	Cluster   string // "<provider>+<cluster>", verbatim in paths as EMCO writes it
	Instance  string // the deployment's stable folder
	Namespace string // for namespaced objects that name none (the logical cloud's)
	Apps      []App  // empty: the deployment leaves the cluster
	Flux      FluxOptions
	// Tenant, when set, confines the deployment to a standard or privileged logical
	// cloud: on fluxcd its Kustomization lives in the cloud's namespace and impersonates
	// the cloud's ServiceAccount (EMCO's <cloud>-sa); on anthos its files go to the
	// folder of the cloud's RepoSync, whose reconciler's ServiceAccount it names. nil: the
	// cluster's own rights (admin clouds, and logical clouds' own set-up).
	Tenant *ServiceAccount
	// BootstrapNamespaces (fluxcd) commits the deployment's Namespaces in its
	// Kustomization's file, which the cluster's bootstrap Kustomization applies, rather
	// than in its folder: a logical cloud's set-up. The Kustomizations of the cloud's
	// deployments live in its namespace and are applied by the bootstrap Kustomization
	// too, which fails whole, the cloud's own Kustomization with it, while the namespace
	// does not exist: it would never exist if only the cloud's Kustomization created it.
	// Applied in the same reconcile, Flux creates the Namespace first.
	BootstrapNamespaces bool
}

// ServiceAccount names a logical cloud's ServiceAccount on a GitOps cluster.
type ServiceAccount struct {
	Namespace, Name string
}

// App is one app's rendered objects.
type App struct {
	Name    string
	Objects []Object
}

// Object is one rendered object; Manifest is its JSON.
type Object struct {
	Group, Version, Kind, Namespace, Name string
	Manifest                              []byte
}

// FluxOptions are the Kustomization's timers (the cluster's gitOpsResourceObject).
type FluxOptions struct {
	Interval, RetryInterval, Timeout time.Duration
}

// Flux's bootstrap objects, named as `flux bootstrap` names them: the source every
// Kustomization temco writes reads from, in the namespace they live in.
const (
	FluxNamespace = "flux-system"
	fluxSource    = "flux-system"
)

// For returns the change that makes the repository hold dep on its cluster for a
// cluster of gitOpsType typ (syncobject.FluxCD, AzureArcV2 or Anthos).
func For(typ string, dep Deployment) (gitops.Change, error) {
	if dep.Cluster == "" || dep.Instance == "" || strings.ContainsAny(dep.Cluster+dep.Instance, "/\\") {
		return gitops.Change{}, fmt.Errorf("deployment of instance %q on cluster %q: not a valid folder", dep.Instance, dep.Cluster)
	}
	if typ == syncobject.Anthos && dep.Tenant != nil && (dep.Namespace == "" || strings.ContainsAny(dep.Namespace, "/\\")) {
		return gitops.Change{}, fmt.Errorf("deployment of instance %q on cluster %q: logical cloud namespace %q is not a valid folder", dep.Instance, dep.Cluster, dep.Namespace)
	}
	folder := Folder(typ, dep)
	c := gitops.Change{Replace: []string{folder}, Files: map[string][]byte{}}
	sc := scopesOf(dep)
	var namespaces [][]byte // for the Kustomization's file (BootstrapNamespaces)
	for _, app := range dep.Apps {
		names := map[string]bool{}
		for _, o := range app.Objects {
			body, err := manifest(o, sc.namespaceOf(dep, o.Group, o.Kind, o.Namespace))
			if err != nil {
				return gitops.Change{}, fmt.Errorf("app %s: %s %s: %w", app.Name, o.Kind, o.Name, err)
			}
			if typ == syncobject.FluxCD && dep.BootstrapNamespaces && o.Group == "" && o.Kind == "Namespace" {
				namespaces = append(namespaces, body)
				continue
			}
			c.Files[folder+"app/"+app.Name+"/"+fileName(names, o)] = body
		}
	}
	switch typ {
	case syncobject.FluxCD:
		if t := dep.Tenant; t != nil && (t.Namespace == "" || t.Name == "") {
			return gitops.Change{}, fmt.Errorf("deployment of instance %q on cluster %q: the logical cloud's ServiceAccount %q/%q is incomplete", dep.Instance, dep.Cluster, t.Namespace, t.Name)
		}
		kust := KustomizationFile(dep)
		c.Replace = append(c.Replace, kust)
		path, body := ContextKustomization(dep.Cluster)
		c.Files[path] = body
		if len(dep.Apps) > 0 {
			body, err := kustomization(dep)
			if err != nil {
				return gitops.Change{}, err
			}
			for _, ns := range namespaces {
				body = append(append(body, "---\n"...), ns...)
			}
			c.Files[kust] = body
		}
	case syncobject.AzureArcV2, syncobject.Anthos:
		// Azure Arc's Flux configuration (created through Azure's API) points at the folder.
		if dep.Tenant != nil && typ == syncobject.AzureArcV2 { // the api refuses standard logical clouds there
			return gitops.Change{}, fmt.Errorf("gitOpsType %q: temco confines deployments to a logical cloud's rights only on fluxcd and anthos clusters", typ)
		}
		if typ == syncobject.Anthos && len(dep.Apps) > 0 {
			var apps []string
			for _, a := range dep.Apps {
				apps = append(apps, a.Name)
			}
			c.Files[folder+"deployed"] = []byte(strings.Join(apps, "\n") + "\n")
		}
	default:
		return gitops.Change{}, fmt.Errorf("gitOpsType %q has no repository layout", typ)
	}
	return c, nil
}

func clusterDir(cluster string) string { return "clusters/" + cluster + "/" }
func contextDir(cluster string) string { return clusterDir(cluster) + "context/" }

// Folder is the folder of the deployment's object files: below its cluster's folder or,
// for a logical cloud's deployment on anthos, below the folder the cloud's RepoSync reads.
func Folder(typ string, dep Deployment) string {
	if typ == syncobject.Anthos && dep.Tenant != nil {
		return RepoSyncDir(dep.Namespace, dep.Cluster) + "/context/" + dep.Instance + "/"
	}
	return contextDir(dep.Cluster) + dep.Instance + "/"
}

// RepoSyncDir is the folder a logical cloud's RepoSync on an anthos cluster reads (for
// namespace ns and cluster "<provider>+<cluster>"): namespaces/<ns>/<c>, as EMCO's anthos
// plugin lays it out.
func RepoSyncDir(ns, cluster string) string { return "namespaces/" + ns + "/" + cluster }

// FluxPaths are the paths of the repository that hold a Flux deployment: its folder and
// its Kustomization. Flux applied what git holds for the deployment when both are at the
// revision its Kustomization last applied as they are at the branch's head.
func FluxPaths(dep Deployment) []string {
	return []string{Folder(syncobject.FluxCD, dep), KustomizationFile(dep)}
}

// KustomizationFile is the path of the deployment's Flux Kustomization.
func KustomizationFile(dep Deployment) string {
	return clusterDir(dep.Cluster) + "kust" + dep.Instance + ".yaml"
}

// BootstrapKustomization names the cluster's bootstrap Kustomization (`flux bootstrap`'s),
// which applies the Kustomization files temco writes (and BootstrapNamespaces).
func BootstrapKustomization() (namespace, name string) { return FluxNamespace, fluxSource }

// KustomizationOf names the deployment's Flux Kustomization on the cluster: in
// flux-system, or in its logical cloud's namespace (where the ServiceAccount it
// impersonates is: kustomize-controller looks spec.serviceAccountName up there).
func KustomizationOf(dep Deployment) (namespace, name string) {
	if dep.Tenant != nil {
		return dep.Tenant.Namespace, "kust" + dep.Instance
	}
	return FluxNamespace, "kust" + dep.Instance
}

// ContextKustomization is the file every Flux change of cluster writes besides the
// deployment, which a cluster's bootstrap may seed (the local stack does).
func ContextKustomization(cluster string) (path string, body []byte) {
	return contextDir(cluster) + "kustomization.yaml", []byte(contextKustomization)
}

// contextKustomization is an empty kustomize Kustomization: kustomize-controller builds
// every manifest below a Kustomization's path unless a folder has its own
// kustomization.yaml, so without it the cluster's bootstrap Kustomization (path
// clusters/<c>) would apply the deployments too, and each object would have two owners.
const contextKustomization = `# Written by temco. Each folder here is applied by its own Flux Kustomization
# (../kust<folder>.yaml); this empty list keeps the cluster's bootstrap
# Kustomization from applying them as well.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: []
`

// kustomization is the deployment's Flux Kustomization: it applies the deployment's
// folder from the bootstrap source, pruning what the folder no longer holds (and, when
// the file is removed and the bootstrap Kustomization deletes it, everything it applied).
// temco writes the v1 APIs (EMCO's v1beta1/v1beta2 are no longer served).
//
// A logical cloud's deployment (dep.Tenant) is applied, pruned and deleted by
// kustomize-controller impersonating the cloud's ServiceAccount
// (system:serviceaccount:<ns>:<cloud>-sa), so what the cloud's roles do not allow fails
// as Forbidden. It reads the bootstrap source across namespaces, which kustomize-controller
// allows unless it runs with --no-cross-namespace-refs=true (then it answers
// AccessDenied); the source is fetched with the controller's own rights, never the
// ServiceAccount's. EMCO writes instead a GitRepository per deployment in the cloud's
// namespace, without credentials: the repository must then be readable anonymously.
func kustomization(dep Deployment) ([]byte, error) {
	ns, name := KustomizationOf(dep)
	source := map[string]any{"kind": "GitRepository", "name": fluxSource}
	k := map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"interval":      dep.Flux.Interval.String(),
			"retryInterval": dep.Flux.RetryInterval.String(),
			"timeout":       dep.Flux.Timeout.String(),
			"path":          "./" + contextDir(dep.Cluster) + dep.Instance,
			"prune":         true,
			"sourceRef":     source,
		},
	}
	if dep.Tenant != nil {
		source["namespace"] = FluxNamespace
		k["spec"].(map[string]any)["serviceAccountName"] = dep.Tenant.Name
	}
	return yaml.Marshal(k)
}

// manifest turns an object's JSON into the YAML committed, its namespace filled in.
func manifest(o Object, namespace string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(o.Manifest, &m); err != nil {
		return nil, fmt.Errorf("manifest is not a JSON object: %w", err)
	}
	if namespace != "" && o.Namespace == "" {
		meta, _ := m["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			m["metadata"] = meta
		}
		meta["namespace"] = namespace
	}
	return yaml.Marshal(m)
}

// fileName is "<name>+<Kind>.yaml", EMCO's name; the rare further object of an app with
// the same name and kind (another namespace or group) gets a number added.
func fileName(used map[string]bool, o Object) string {
	n := o.Name + "+" + o.Kind
	for i := 2; used[n]; i++ {
		n = fmt.Sprintf("%s+%s+%d", o.Name, o.Kind, i)
	}
	used[n] = true
	return n + ".yaml"
}

// NamespaceOf is the namespace an object of group and kind naming namespace (or none)
// lands in on the cluster: its own, none for cluster-scoped kinds, else the deployment's.
func NamespaceOf(dep Deployment, group, kind, namespace string) string {
	return scopesOf(dep).namespaceOf(dep, group, kind, namespace)
}

// scopes knows which kinds are cluster-scoped: Kubernetes' own, and those whose
// CustomResourceDefinition the deployment itself carries. temco cannot ask a GitOps
// cluster; any other kind is taken to be namespaced, as kustomize does.
type scopes map[string]bool

func scopesOf(dep Deployment) scopes {
	s := scopes{}
	for _, a := range dep.Apps {
		for _, o := range a.Objects {
			if o.Group != "apiextensions.k8s.io" || o.Kind != "CustomResourceDefinition" {
				continue
			}
			var crd struct {
				Spec struct {
					Group, Scope string
					Names        struct{ Kind string }
				}
			}
			if json.Unmarshal(o.Manifest, &crd) == nil && crd.Spec.Scope == "Cluster" {
				s[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = true
			}
		}
	}
	return s
}

func (s scopes) namespaceOf(dep Deployment, group, kind, namespace string) string {
	if s[group+"/"+kind] || clusterScoped[group+"/"+kind] {
		return ""
	}
	if namespace != "" {
		return namespace
	}
	return dep.Namespace
}

// clusterScoped lists Kubernetes' cluster-scoped kinds by "<group>/<Kind>".
var clusterScoped = func() map[string]bool {
	m := map[string]bool{}
	for group, kinds := range map[string][]string{
		"":                             {"Namespace", "Node", "PersistentVolume", "ComponentStatus"},
		"rbac.authorization.k8s.io":    {"ClusterRole", "ClusterRoleBinding"},
		"apiextensions.k8s.io":         {"CustomResourceDefinition"},
		"apiregistration.k8s.io":       {"APIService"},
		"admissionregistration.k8s.io": {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"},
		"storage.k8s.io":               {"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass"},
		"scheduling.k8s.io":            {"PriorityClass"},
		"node.k8s.io":                  {"RuntimeClass"},
		"networking.k8s.io":            {"IngressClass", "IPAddress", "ServiceCIDR"},
		"certificates.k8s.io":          {"CertificateSigningRequest", "ClusterTrustBundle"},
		"flowcontrol.apiserver.k8s.io": {"FlowSchema", "PriorityLevelConfiguration"},
		"resource.k8s.io":              {"DeviceClass"},
	} {
		for _, k := range kinds {
			m[group+"/"+k] = true
		}
	}
	return m
}()
