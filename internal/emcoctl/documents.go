// Package emcoctl runs EMCO's emcoctl resource files against the API: multi-document
// YAML rendered as a Go text/template with a values file, each document naming the API
// path it belongs to (resourceContext.anchor).
package emcoctl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// Document is one resource of a file.
type Document struct {
	Version         string `json:"version"`
	ResourceContext struct {
		Anchor string `json:"anchor"`
	} `json:"resourceContext"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Spec         any            `json:"spec,omitempty"`
	File         string         `json:"file,omitempty"`
	Files        []string       `json:"files,omitempty"`
	ClusterLabel string         `json:"clusterLabel,omitempty"`
	LabelName    string         `json:"label-name,omitempty"` // older emcoctl files' clusterLabel

	dir string // of the file it came from: relative file paths resolve there too
}

// Name is the resource name (metadata.name, or the label for cluster labels).
func (d *Document) Name() string {
	if d.ClusterLabel != "" {
		return d.ClusterLabel
	}
	name, _ := d.Metadata["name"].(string)
	return name
}

// Path is the resource's own path: anchor/name, and the version for a composite app.
func (d *Document) Path() string {
	p := path.Join(d.ResourceContext.Anchor, d.Name())
	if path.Base(d.ResourceContext.Anchor) == "composite-apps" {
		spec, _ := d.Spec.(map[string]any)
		v, ok := spec["compositeAppVersion"].(string)
		if !ok {
			v, _ = spec["version"].(string) // the field's name in older EMCO files
		}
		p = path.Join(p, v)
	}
	return p
}

// operations are anchors' last segments that are lifecycle actions, not collections.
var operations = map[string]bool{"approve": true, "instantiate": true, "terminate": true, "update": true,
	"stop": true, "rollback": true, "apply": true, "migrate": true, "status": true}

// Operation returns the action a document's anchor ends in ("" for a collection).
func (d *Document) Operation() string {
	last := path.Base(strings.Trim(d.ResourceContext.Anchor, "/"))
	if operations[last] {
		return last
	}
	return ""
}

// Load renders files as templates with the values files and splits them into documents.
func Load(files, values []string) ([]*Document, error) {
	vals := map[string]any{}
	for _, v := range values {
		data, err := os.ReadFile(v)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("values file %s: %w", v, err)
		}
		for k, x := range m {
			vals[k] = x
		}
	}
	var docs []*Document
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		tmpl, err := template.New(filepath.Base(f)).Option("missingkey=error").Parse(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, vals); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		ds, err := split(out.Bytes(), filepath.Dir(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		docs = append(docs, ds...)
	}
	return docs, nil
}

// split parses the YAML documents of a rendered file.
func split(data []byte, dir string) ([]*Document, error) {
	var docs []*Document
	for i, raw := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		d := &Document{dir: dir}
		if err := yaml.UnmarshalStrict(raw, d); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if d.ClusterLabel == "" {
			d.ClusterLabel = d.LabelName
		}
		if d.ResourceContext.Anchor == "" {
			return nil, fmt.Errorf("document %d has no resourceContext.anchor", i+1)
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil, errors.New("no documents")
	}
	return docs, nil
}

// openFile reads a document's file: as given, or relative to the resource file.
func (d *Document) openFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil && !filepath.IsAbs(name) && errors.Is(err, os.ErrNotExist) {
		data, err = os.ReadFile(filepath.Join(d.dir, name))
	}
	return data, err
}
