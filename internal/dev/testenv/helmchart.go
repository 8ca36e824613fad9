package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ChartDir is the path of temco's own Helm chart.
func ChartDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "temco"), nil
}

// ValuesFile reads one of the chart's ci/ values files.
func ValuesFile(name string) (map[string]any, error) {
	dir, err := ChartDir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "ci", name))
	if err != nil {
		return nil, err
	}
	vals := map[string]any{}
	return vals, yaml.Unmarshal(data, &vals)
}

// KubeVersion is the Kubernetes version charts are rendered for: the local clusters'.
const KubeVersion = "v1.35.4"

// RenderChart renders the chart in dir as `helm template` does (values schema
// validated), returning its objects in Helm's install order.
func RenderChart(dir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.IncludeCRDs = true, true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = release, namespace, kv
	rel, err := install.Run(ch, values)
	if err != nil {
		return nil, err
	}
	_, manifests, err := releaseutil.SortManifests(releaseutil.SplitManifests(rel.Manifest), nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, m := range manifests {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.Content), &o.Object); err != nil {
			return nil, fmt.Errorf("rendered manifest %s: %w", m.Name, err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
	return objs, nil
}
