package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// maxFile bounds what a ConfigMap or Secret key may hand the API (the API's own bound on
// a chart; a Kubernetes object cannot be larger anyway).
const maxFile = 10 << 20

// files reads the ConfigMap and Secret keys objects name, in one namespace only.
type files struct {
	kube      client.Reader
	namespace string
	secrets   []string // the namespaces whose Secrets the hub may read (nil: all)
	lenient   bool     // a key that cannot be read is empty (an object being deleted)
}

func (f files) read(ctx context.Context, ref v1.KeyRef) ([]byte, error) {
	b, err := f.readKey(ctx, ref)
	if err != nil && f.lenient {
		return nil, nil
	}
	return b, err
}

func (f files) readKey(ctx context.Context, ref v1.KeyRef) ([]byte, error) {
	key := types.NamespacedName{Namespace: f.namespace, Name: ref.Name}
	var data []byte
	var ok bool
	if ref.Kind == "Secret" {
		if f.secrets != nil && !slices.Contains(f.secrets, f.namespace) {
			return nil, &Refusal{Code: http.StatusForbidden, Message: fmt.Sprintf(
				"Secret %s: the hub reads Secrets only in %s: put the file in a ConfigMap, or an admin adds namespace %s to the hub's (hub.tenantNamespaces)",
				key, strings.Join(f.secrets, ", "), f.namespace)}
		}
		var s corev1.Secret
		if err := f.kube.Get(ctx, key, &s); err != nil {
			return nil, fmt.Errorf("Secret %s: %w", key, err)
		}
		data, ok = s.Data[ref.Key]
	} else {
		var cm corev1.ConfigMap
		if err := f.kube.Get(ctx, key, &cm); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %w", key, err)
		}
		if data, ok = cm.BinaryData[ref.Key]; !ok {
			var s string
			s, ok = cm.Data[ref.Key]
			data = []byte(s)
		}
	}
	if !ok {
		return nil, &Refusal{Code: 400, Message: fmt.Sprintf("%s %s has no key %q", ref.Kind, key, ref.Key)}
	}
	if len(data) > maxFile {
		return nil, &Refusal{Code: 400, Message: fmt.Sprintf("%s %s key %q: %d bytes, over %d", ref.Kind, key, ref.Key, len(data), maxFile)}
	}
	return data, nil
}

// nameOf is an object's temco name.
func nameOf(n v1.Named, objectName string) string {
	if n.Name != "" {
		return n.Name
	}
	return objectName
}

func metadata(name, description string) map[string]any {
	return map[string]any{"name": name, "description": description}
}

func esc(s string) string { return url.PathEscape(s) }

// raw decodes a preserved JSON field (nil stays nil).
func raw(j *apiextensionsv1.JSON) any {
	if j == nil || len(j.Raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(j.Raw, &v) != nil {
		return nil
	}
	return v
}

// jsonOf turns a typed value into the generic form bodies use.
func jsonOf(v any) any {
	var out any
	roundTrip(v, &out)
	return out
}

func providerNode(o *v1.ClusterProvider) *node {
	name := nameOf(o.Spec.Named, o.Name)
	return &node{coll: "/cluster-providers", name: name, body: map[string]any{"metadata": metadata(name, o.Spec.Description), "spec": map[string]any{}}}
}

// clusterNode: the kubeconfig comes from the hub controller's own namespace.
func clusterNode(ctx context.Context, f files, o *v1.Cluster) (*node, error) {
	name := nameOf(o.Spec.Named, o.Name)
	kc, err := f.read(ctx, o.Spec.Kubeconfig)
	if err != nil {
		return nil, err
	}
	coll := "/cluster-providers/" + esc(o.Spec.Provider) + "/clusters"
	n := &node{coll: coll, name: name, multipart: true, file: kc,
		body: map[string]any{"metadata": metadata(name, o.Spec.Description), "spec": map[string]any{}}, manages: []string{"labels"}}
	for _, l := range o.Spec.Labels {
		n.children = append(n.children, &node{coll: coll + "/" + esc(name) + "/labels", name: l, body: map[string]any{"clusterLabel": l}})
	}
	return n, nil
}

func projectNode(o *v1.Project) *node {
	name := nameOf(o.Spec.Named, o.Name)
	return &node{coll: "/projects", name: name, body: map[string]any{"metadata": metadata(name, o.Spec.Description), "spec": map[string]any{}}}
}

func logicalCloudNode(o *v1.LogicalCloud) *node {
	name := nameOf(o.Spec.Named, o.Name)
	coll := "/projects/" + esc(o.Spec.Project) + "/logical-clouds"
	spec := map[string]any{"level": o.Spec.Level, "namespace": o.Spec.Namespace, "labels": o.Spec.Labels}
	n := &node{coll: coll, name: name, body: map[string]any{"metadata": metadata(name, o.Spec.Description), "spec": spec}, manages: []string{"cluster-references"}}
	for _, c := range o.Spec.Clusters {
		ref := c.Provider + "-" + c.Cluster
		n.children = append(n.children, &node{coll: coll + "/" + esc(name) + "/cluster-references", name: ref,
			body: map[string]any{"metadata": metadata(ref, ""), "spec": map[string]any{"clusterProvider": c.Provider, "cluster": c.Cluster}}})
	}
	return n
}

// compositeAppNode: the composite app's version, its apps and profiles, in project (the
// object's namespace's).
func compositeAppNode(ctx context.Context, f files, project string, o *v1.CompositeApp) (*node, error) {
	name := nameOf(o.Spec.Named, o.Name)
	coll := "/projects/" + esc(project) + "/composite-apps"
	ca := coll + "/" + esc(name) + "/" + esc(o.Spec.Version)
	n := &node{coll: coll, name: name, item: ca, manages: []string{"apps", "composite-profiles"},
		body: map[string]any{"metadata": metadata(name, o.Spec.Description), "spec": map[string]any{"compositeAppVersion": o.Spec.Version}}}
	for _, a := range o.Spec.Apps {
		app := &node{coll: ca + "/apps", name: a.Name, body: map[string]any{"metadata": metadata(a.Name, a.Description), "spec": map[string]any{}}}
		if a.Chart != nil {
			app.body["spec"] = map[string]any{"chart": jsonOf(a.Chart)}
		} else {
			b, err := f.read(ctx, *a.ChartFrom)
			if err != nil {
				return nil, err
			}
			app.file, app.multipart = b, true
		}
		n.children = append(n.children, app)
	}
	for _, cp := range o.Spec.Profiles {
		pn := &node{coll: ca + "/composite-profiles", name: cp.Name, body: map[string]any{"metadata": metadata(cp.Name, ""), "spec": map[string]any{}}, manages: []string{"profiles"}}
		for _, p := range cp.Profiles {
			prof := &node{coll: ca + "/composite-profiles/" + esc(cp.Name) + "/profiles", name: p.Name,
				body: map[string]any{"metadata": metadata(p.Name, ""), "spec": map[string]any{"app": p.App}}}
			if p.Archive != nil {
				prof.body["spec"] = map[string]any{"app": p.App, "archive": jsonOf(p.Archive)}
			} else {
				b, err := f.read(ctx, *p.ArchiveFrom)
				if err != nil {
					return nil, err
				}
				prof.file, prof.multipart = b, true
			}
			pn.children = append(pn.children, prof)
		}
		n.children = append(n.children, pn)
	}
	return n, nil
}

// placementName and intentsName are the names the hub gives the DIG's generic placement
// intent and its intents resource, of which a declared DIG has one each.
const (
	placementName = "placement"
	intentsName   = "intents"
	rolloutName   = "rollout"
)

// digPath is the DIG's resource path in project.
func digPath(project string, o *v1.DeploymentIntentGroup) string {
	return fmt.Sprintf("/projects/%s/composite-apps/%s/%s/deployment-intent-groups/%s", esc(project),
		esc(o.Spec.CompositeApp), esc(o.Spec.CompositeAppVersion), esc(nameOf(o.Spec.Named, o.Name)))
}

// digNode: the DIG, then its placement, action intents, intents and rollout strategy
// (the intents resource names the others, which must exist first).
func digNode(ctx context.Context, f files, project string, o *v1.DeploymentIntentGroup) (*node, error) {
	name := nameOf(o.Spec.Named, o.Name)
	p := digPath(project, o)
	spec := map[string]any{"compositeProfile": o.Spec.CompositeProfile, "version": o.Spec.Version, "logicalCloud": o.Spec.LogicalCloud,
		"overrideValues": jsonOf(o.Spec.OverrideValues), "driftDetection": raw(o.Spec.DriftDetection), "imagePinning": raw(o.Spec.ImagePinning)}
	n := &node{coll: p[:len(p)-len(esc(name))-1], name: name, body: map[string]any{"metadata": metadata(name, o.Spec.Description), "spec": spec},
		manages: []string{"rollout-strategies"}}
	gpi := &node{coll: p + "/generic-placement-intents", name: placementName, body: map[string]any{"metadata": metadata(placementName, ""), "spec": map[string]any{}},
		manages: []string{"app-intents"}}
	for _, a := range o.Spec.Placement {
		intent := map[string]any{"allOf": jsonOf(a.AllOf), "anyOf": jsonOf(a.AnyOf)}
		gpi.children = append(gpi.children, &node{coll: gpi.path() + "/app-intents", name: a.App,
			body: map[string]any{"metadata": metadata(a.App, ""), "spec": map[string]any{"app": a.App, "intent": intent}}})
	}
	n.children = append(n.children, gpi)
	keys := map[string]any{"genericPlacementIntent": placementName}
	for _, ai := range o.Spec.ActionIntents {
		in := &node{coll: p + "/" + ai.Resource, name: ai.Name, body: map[string]any{"metadata": metadata(ai.Name, ""), "spec": raw(ai.Spec)}}
		for _, r := range ai.Resources {
			rn, err := intentNode(ctx, f, in.path(), r.Resource, r.Name, r.Spec, r.File)
			if err != nil {
				return nil, err
			}
			for _, l := range r.Resources {
				ln, err := intentNode(ctx, f, rn.path(), l.Resource, l.Name, l.Spec, l.File)
				if err != nil {
					return nil, err
				}
				rn.children = append(rn.children, ln)
			}
			in.children = append(in.children, rn)
		}
		for _, r := range ai.Resources {
			if !slices.Contains(in.manages, r.Resource) {
				in.manages = append(in.manages, r.Resource)
			}
		}
		n.children = append(n.children, in)
		keys[ai.Controller] = ai.Name
	}
	// The intents' collections, and those the last apply wrote to: an intent that left
	// the spec has its item deleted.
	for _, c := range append(intentCollections(o), o.Status.IntentCollections...) {
		if !slices.Contains(n.manages, c) && segment.MatchString(c) {
			n.manages = append(n.manages, c)
		}
	}
	n.children = append(n.children, &node{coll: p + "/intents", name: intentsName,
		body: map[string]any{"metadata": metadata(intentsName, ""), "spec": map[string]any{"intent": keys}}})
	if o.Spec.RolloutStrategy != nil {
		n.children = append(n.children, &node{coll: p + "/rollout-strategies", name: rolloutName,
			body: map[string]any{"metadata": metadata(rolloutName, ""), "spec": raw(o.Spec.RolloutStrategy)}})
	}
	return n, nil
}

func intentNode(ctx context.Context, f files, parent, resource, name string, spec *apiextensionsv1.JSON, file *v1.KeyRef) (*node, error) {
	n := &node{coll: parent + "/" + resource, name: name, body: map[string]any{"metadata": metadata(name, ""), "spec": raw(spec)}}
	if file != nil {
		b, err := f.read(ctx, *file)
		if err != nil {
			return nil, err
		}
		n.file, n.multipart = b, true
	}
	return n, nil
}

// intentCollections are the collections of the DIG's action intents, in spec order.
func intentCollections(o *v1.DeploymentIntentGroup) []string {
	var out []string
	for _, ai := range o.Spec.ActionIntents {
		if !slices.Contains(out, ai.Resource) {
			out = append(out, ai.Resource)
		}
	}
	return out
}
