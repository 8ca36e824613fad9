package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/temco/temco/internal/adapters/archive"
	"github.com/temco/temco/internal/adapters/profile"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capabilities"
)

// chartInput is everything one app's rendering depends on.
type chartInput struct {
	app       string            // the app's name: its chart's folder in the archive
	archive   []byte            // the app's Helm chart archive, as uploaded
	profile   *profile.Profile  // the app profile (nil: none)
	overrides map[string]string // DIG overrideValues for the app ("a.b.c": "v")
	release   string            // .Release.Name (EMCO: the DIG's spec.version)
	namespace string            // .Release.Namespace
	labels    map[string]string // added to every object
	// caps are the target clusters' (nil: Helm's defaults, as `helm template`).
	caps *capabilities.Capabilities
}

// rendering is one app's chart rendered.
type rendering struct {
	objects []appctx.Object // in apply order
	// readsCapabilities: the chart (with the profile's templates) mentions .Capabilities.
	readsCapabilities bool
}

// renderChart renders a chart client-side, as `helm template` does, and returns its
// objects in apply order: Namespaces and CRDs first, then Helm's install order.
func renderChart(ctx context.Context, in chartInput) ([]appctx.Object, error) {
	r, err := render(ctx, in)
	return r.objects, err
}

// render is renderChart, telling also whether the chart reads .Capabilities.
func render(ctx context.Context, in chartInput) (rendering, error) {
	return renderWithin(ctx, in, renderTimeout)
}

// renderWithin is render, failing when the chart takes longer than timeout.
func renderWithin(ctx context.Context, in chartInput, timeout time.Duration) (rendering, error) {
	return within(ctx, timeout, func() (rendering, error) { return helmTemplate(ctx, in) })
}

// helmTemplate renders as `helm template` does, refusing what is over the limits.
func helmTemplate(ctx context.Context, in chartInput) (rendering, error) {
	if err := checkOverrideIndices(in.overrides); err != nil {
		return rendering{}, err
	}
	ch, err := archive.LoadChart(in.archive, in.app)
	if err != nil {
		return rendering{}, fmt.Errorf("load chart: %w", err)
	}
	vals := map[string]any{}
	if in.profile != nil {
		vals = in.profile.Values
		replaceTemplates(ch, in.profile.Templates)
	}
	// A chart's kubeVersion constraint is checked against the clusters' versions when
	// rendered for them (RenderVariants), not against the default.
	out := rendering{readsCapabilities: mentionsCapabilities(ch) || ch.Metadata.KubeVersion != ""}
	if in.caps == nil {
		ch.Metadata.KubeVersion = ""
	}
	if err := applyOverrides(in.overrides, vals); err != nil {
		return rendering{}, err
	}
	install, err := templateInstall(in)
	if err != nil {
		return rendering{}, err
	}
	rel, err := install.RunWithContext(ctx, ch, vals)
	if err != nil {
		return rendering{}, fmt.Errorf("render chart %s: %w", ch.Name(), err)
	}
	if out.objects, err = releaseObjects(ch.Name(), rel, in.labels); err != nil {
		return rendering{}, err
	}
	return out, nil
}

// applyOverrides sets each override (a --set path and its value) in vals, in the order
// of their paths.
func applyOverrides(overrides map[string]string, vals map[string]any) error {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := strvals.ParseInto(k+"="+overrides[k], vals); err != nil {
			return fmt.Errorf("override value %q: %w", k, err)
		}
	}
	return nil
}

// templateInstall is a client-only dry-run install of in's release, for in's cluster
// capabilities when it has them.
func templateInstall(in chartInput) (*action.Install, error) {
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace, install.IncludeCRDs = true, true, true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = in.release, in.namespace, defaultKubeVersion
	if in.caps != nil {
		// Helm takes these in addition to its own API versions (those of the Kubernetes it
		// is built for), as `helm template --kube-version --api-versions` does.
		kv, err := chartutil.ParseKubeVersion(in.caps.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("the cluster's Kubernetes version %q: %w", in.caps.KubeVersion, err)
		}
		install.KubeVersion, install.APIVersions = kv, in.caps.APIVersions
	}
	return install, nil
}

// releaseObjects are the objects of chart's rendered release and its hooks (not test
// hooks), in the order they are applied, refusing more than an app may have.
func releaseObjects(chart string, rel *release.Release, labels map[string]string) ([]appctx.Object, error) {
	yamlBytes := len(rel.Manifest)
	for _, h := range rel.Hooks {
		yamlBytes += len(h.Manifest)
	}
	if yamlBytes > maxManifestBytes {
		return nil, fmt.Errorf("chart %s renders %d bytes of manifests, more than the %s an app may have", chart, yamlBytes, size(maxManifestBytes))
	}
	docs := splitInOrder(rel.Manifest)
	for _, h := range rel.Hooks {
		if !isTestHook(h) {
			docs = append(docs, h.Manifest)
		}
	}
	objs := make([]appctx.Object, 0, min(len(docs), maxObjects))
	objectsBytes := 0
	for _, doc := range docs {
		o, ok, err := toObject(doc, labels)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", chart, err)
		}
		if !ok {
			continue
		}
		// YAML aliases may make an object larger than its document: counted as JSON too.
		if objectsBytes += len(o.Manifest); objectsBytes > maxObjectsBytes {
			return nil, fmt.Errorf("chart %s renders objects of more than %s (as JSON), the most an app may have", chart, size(maxObjectsBytes))
		}
		if len(objs) == maxObjects {
			return nil, fmt.Errorf("chart %s renders more than %d objects, the most an app may have", chart, maxObjects)
		}
		objs = append(objs, o)
	}
	sortForApply(objs)
	return objs, nil
}

// defaultKubeVersion is the Kubernetes version charts are rendered for when their
// clusters' is not known: the one temco's Kubernetes libraries (k8s.io/apimachinery v0.37)
// are built for; a test keeps the two together. Helm's own default, 1.20, predates every
// cluster temco serves, and fails charts that require more.
var defaultKubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

// mentionsCapabilities tells whether a chart (its subcharts included) mentions
// .Capabilities anywhere in its templates: only such charts may render differently for
// clusters of other Kubernetes versions or APIs.
func mentionsCapabilities(ch *chart.Chart) bool {
	for _, t := range ch.Templates {
		if bytes.Contains(t.Data, []byte(".Capabilities")) {
			return true
		}
	}
	return slices.ContainsFunc(ch.Dependencies(), mentionsCapabilities)
}

// replaceTemplates swaps chart templates for profile-provided files; a profile names
// them "<chart folder>/templates/<file>" as in EMCO. The folder is not checked, so a
// chart at the archive root takes "<app>/templates/<file>" too.
func replaceTemplates(ch *chart.Chart, files map[string][]byte) {
	for p, data := range files {
		_, rel, ok := strings.Cut(p, "/")
		if !ok {
			continue
		}
		rel = path.Clean(rel)
		replaced := false
		for _, t := range ch.Templates {
			if t.Name == rel {
				t.Data, replaced = data, true
			}
		}
		if !replaced {
			ch.Templates = append(ch.Templates, &chart.File{Name: rel, Data: data})
		}
	}
}

func isTestHook(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}

// splitInOrder splits a multi-document manifest, keeping document order.
func splitInOrder(manifest string) []string {
	m := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Keys are "manifest-<n>".
	num := func(k string) int { n, _ := strconv.Atoi(strings.TrimPrefix(k, "manifest-")); return n }
	sort.Slice(keys, func(i, j int) bool { return num(keys[i]) < num(keys[j]) })
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// toObject parses one YAML document and adds labels; empty documents are skipped.
func toObject(doc string, labels map[string]string) (appctx.Object, bool, error) {
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return appctx.Object{}, false, fmt.Errorf("rendered manifest is not valid YAML: %v", err)
	}
	if string(js) == "null" || string(js) == "{}" {
		return appctx.Object{}, false, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return appctx.Object{}, false, fmt.Errorf("rendered manifest is not a Kubernetes object: %v", err)
	}
	if u.GetName() == "" {
		return appctx.Object{}, false, fmt.Errorf("rendered %s has no metadata.name", u.GetKind())
	}
	if len(labels) > 0 {
		all := u.GetLabels()
		if all == nil {
			all = map[string]string{}
		}
		maps.Copy(all, labels)
		u.SetLabels(all)
	}
	canon, err := json.Marshal(u.Object) // map keys sorted: a canonical form for hashing
	if err != nil {
		return appctx.Object{}, false, err
	}
	gvk := u.GroupVersionKind()
	sum := sha256.Sum256(canon)
	return appctx.Object{
		Ref:      appctx.Ref{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()},
		Manifest: string(canon), Hash: hex.EncodeToString(sum[:]),
	}, true, nil
}

// sortForApply orders Namespaces, then CRDs, then Helm's install order; kinds Helm does
// not know go last, in the order they were rendered.
func sortForApply(objs []appctx.Object) {
	rank := map[string]int{"Namespace": 0, "CustomResourceDefinition": 1}
	for i, k := range releaseutil.InstallOrder {
		if _, ok := rank[k]; !ok {
			rank[k] = i + 2
		}
	}
	last := len(releaseutil.InstallOrder) + 2
	sort.SliceStable(objs, func(i, j int) bool {
		ri, ok := rank[objs[i].Kind]
		if !ok {
			ri = last
		}
		rj, ok := rank[objs[j].Kind]
		if !ok {
			rj = last
		}
		return ri < rj
	})
}
