// Package profile reads EMCO app profiles: a .tar.gz holding override values
// (override_values.yaml, or the file named by manifest.yaml) and optional files that
// replace chart templates (manifest.yaml "configresource" entries).
package profile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// Limits against hostile archives (zip bombs, entry floods).
const (
	MaxEntries   = 1000
	MaxTotalSize = 32 << 20
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

// Parse reads a profile archive.
func Parse(data []byte) (*Profile, error) {
	files, err := readTarGz(data)
	if err != nil {
		return nil, err
	}
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
	if !ok {
		return nil, fmt.Errorf("the profile has no %s", valuesFile)
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
		if cr.ChartPath == "" {
			return nil, fmt.Errorf("manifest.yaml entry %q has no chartpath", cr.FilePath)
		}
		p.Templates[path.Clean(cr.ChartPath)] = content
	}
	return p, nil
}

// readTarGz returns the regular files of the archive by clean relative path. A single
// top-level directory wrapping everything is dropped, as `tar czf p.tgz dir` produces.
func readTarGz(data []byte) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, errors.New("the profile is not a gzip-compressed tar archive")
	}
	tr := tar.NewReader(io.LimitReader(zr, MaxTotalSize+1))
	files := map[string][]byte{}
	total := 0
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the profile archive is corrupt: %v", err)
		}
		if n >= MaxEntries {
			return nil, fmt.Errorf("the profile archive has more than %d entries", MaxEntries)
		}
		if h.Typeflag != tar.TypeReg {
			continue // directories, links and devices carry no profile content
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("the profile archive has an entry outside its root: %q", h.Name)
		}
		if h.Size > int64(MaxTotalSize-total) { // refused before unpacking anything of it
			return nil, fmt.Errorf("the profile archive unpacks to more than %d MiB", MaxTotalSize>>20)
		}
		body, err := io.ReadAll(io.LimitReader(tr, MaxTotalSize-int64(total)+1))
		if err != nil {
			return nil, fmt.Errorf("the profile archive is corrupt: %v", err)
		}
		if total += len(body); total > MaxTotalSize {
			return nil, fmt.Errorf("the profile archive unpacks to more than %d MiB", MaxTotalSize>>20)
		}
		files[name] = body
	}
	return stripCommonDir(files), nil
}

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
