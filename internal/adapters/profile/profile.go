// Package profile reads EMCO app profiles: a tar archive (gzip-compressed or not)
// holding override values (override_values.yaml, or the file named by manifest.yaml)
// and optional files that replace chart templates (manifest.yaml "configresource").
package profile

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/temco/temco/internal/adapters/archive"
)

// Profile is a parsed app profile.
type Profile struct {
	Values map[string]any // Helm values overriding the chart's
	// Templates maps a chart path ("<chart>/templates/x.yaml") to the content replacing it.
	Templates map[string][]byte
}

type manifest struct {
	Version string `json:"version"`
	Type    struct {
		Values         string `json:"values"`
		ConfigResource []struct {
			FilePath  string `json:"filepath"`
			ChartPath string `json:"chartpath"`
		} `json:"configresource"`
	} `json:"type"`
}

// Parse reads a profile archive. Its files may sit at the archive root, as EMCO needs,
// or in one folder wrapping everything, as `tar -czf p.tgz profile` writes.
func Parse(data []byte) (*Profile, error) {
	files, err := archive.Read(data)
	if err != nil {
		return nil, err
	}
	files = stripCommonDir(files)
	valuesFile := "override_values.yaml"
	var m manifest
	if raw, ok := files["manifest.yaml"]; ok {
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("manifest.yaml is not valid YAML: %v", err)
		}
		if m.Type.Values != "" {
			valuesFile = path.Clean(m.Type.Values)
		}
	}
	raw, ok := files[valuesFile]
	switch {
	case !ok && m.Type.Values != "":
		return nil, fmt.Errorf("manifest.yaml names the values file %q, which the profile does not contain", m.Type.Values)
	case !ok:
		return nil, fmt.Errorf("the profile has no %s (nor a manifest.yaml naming another values file)", valuesFile)
	}
	p := &Profile{Values: map[string]any{}, Templates: map[string][]byte{}}
	if err := yaml.Unmarshal(raw, &p.Values); err != nil {
		return nil, fmt.Errorf("%s is not a YAML map: %v", valuesFile, err)
	}
	if p.Values == nil {
		p.Values = map[string]any{}
	}
	for _, cr := range m.Type.ConfigResource {
		content, ok := files[path.Clean(cr.FilePath)]
		if !ok {
			return nil, fmt.Errorf("manifest.yaml names %q, which the profile does not contain", cr.FilePath)
		}
		chartPath := path.Clean(cr.ChartPath)
		switch {
		case cr.ChartPath == "":
			return nil, fmt.Errorf("manifest.yaml entry %q has no chartpath", cr.FilePath)
		case path.IsAbs(chartPath) || chartPath == ".." || strings.HasPrefix(chartPath, "../"):
			return nil, fmt.Errorf("manifest.yaml chartpath %q leads outside the chart", cr.ChartPath)
		}
		p.Templates[chartPath] = content
	}
	return p, nil
}

// stripCommonDir drops a single top-level folder wrapping every file.
func stripCommonDir(files map[string][]byte) map[string][]byte {
	var dir string
	for name := range files {
		d, _, ok := strings.Cut(name, "/")
		if !ok || (dir != "" && d != dir) {
			return files
		}
		dir = d
	}
	if dir == "" {
		return files
	}
	out := make(map[string][]byte, len(files))
	for name, b := range files {
		out[strings.TrimPrefix(name, dir+"/")] = b
	}
	return out
}
