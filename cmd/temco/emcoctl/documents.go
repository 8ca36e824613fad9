// Package emcoctl runs EMCO's emcoctl resource files against temco's API, as EMCO's own
// emcoctl does: multi-document YAML, rendered as a Go text/template with values files,
// each document naming the API path it belongs to (resourceContext.anchor).
package emcoctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Document is one resource of an emcoctl file, ready to send.
type Document struct {
	index  int    // 1-based, across every file loaded together
	source string // the file it came from
	anchor string
	name   string
	label  string         // clusterLabel: a cluster label document's resource name
	spec   map[string]any // kept to find a composite app's version
	file   string         // sent as the multipart part "file"
	files  []string       // sent as multipart parts "files"; ignored when file is set
	body   []byte         // the JSON body, as emcoctl builds it
}

// document is the YAML shape of a document. Keys it does not name are ignored, as
// emcoctl ignores them; a known key with the wrong type is an error.
type document struct {
	Version         string `yaml:"version"` // read (a type error still counts) but unused, as in emcoctl
	ResourceContext struct {
		Anchor string `yaml:"anchor"`
	} `yaml:"resourceContext"`
	Metadata     metadata       `yaml:"metadata"`
	Spec         map[string]any `yaml:"spec"`
	File         string         `yaml:"file"`
	Files        []string       `yaml:"files"`
	ClusterLabel string         `yaml:"clusterLabel"`
	LabelName    string         `yaml:"label-name"` // older emcoctl files' clusterLabel
	// Addr is a policy agent's address (EMCO's example 05.register_agent.yaml), which
	// emcoctl drops: temco sends it, with the agent's clusters, TLS and token, temco's
	// own keys beside it (docs/policy.md).
	Addr     string         `yaml:"addr"`
	Clusters []agentCluster `yaml:"clusters"`
	TLS      *agentTLS      `yaml:"tls"`
	Token    string         `yaml:"token"`
}

// agentCluster is a cluster a policy agent reports on.
type agentCluster struct {
	ClusterProvider string `yaml:"clusterProvider" json:"clusterProvider"`
	Cluster         string `yaml:"cluster" json:"cluster"`
}

// agentTLS is how a policy agent's certificate is verified.
type agentTLS struct {
	CA         string `yaml:"ca" json:"ca,omitempty"`
	ServerName string `yaml:"serverName" json:"serverName,omitempty"`
}

type metadata struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description,omitempty"`
	UserData1   string `yaml:"userData1" json:"userData1,omitempty"`
	UserData2   string `yaml:"userData2" json:"userData2,omitempty"`
}

// body is the JSON every request carries: metadata always, the rest when set.
type body struct {
	Metadata     metadata       `json:"metadata"`
	ClusterLabel string         `json:"clusterLabel,omitempty"`
	Spec         map[string]any `json:"spec,omitempty"`
	Addr         string         `json:"addr,omitempty"`
	Clusters     []agentCluster `json:"clusters,omitempty"`
	TLS          *agentTLS      `json:"tls,omitempty"`
	Token        string         `json:"token,omitempty"`
}

// Load reads every file in order and returns its documents. With values files the files
// are first rendered as templates (without them, {{ }} reaches the YAML parser as is).
// Nothing is returned unless every document of every file is valid.
func Load(files, values []string) ([]*Document, error) {
	var vals any
	if len(values) > 0 {
		var err error
		if vals, err = readValues(values); err != nil {
			return nil, err
		}
	}
	var docs []*Document
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if len(values) > 0 {
			if data, err = render(f, data, vals); err != nil {
				return nil, err
			}
		}
		ds, err := decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, d := range ds {
			d.index, d.source = len(docs)+1, f
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// decode splits a rendered file into documents the way the YAML parser does, skipping
// empty ones (a trailing "---", "---" followed by comments): emcoctl would send those
// to an empty anchor and fail.
func decode(data []byte) ([]*Document, error) {
	var docs []*Document
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(docs)+1, err)
		}
		if empty(&node) {
			continue
		}
		d, err := convert(&node)
		if err != nil {
			return nil, fmt.Errorf("document %d (line %d): %w", len(docs)+1, node.Line, err)
		}
		docs = append(docs, d)
	}
}

func empty(n *yaml.Node) bool {
	return n.Kind == yaml.DocumentNode && len(n.Content) == 1 &&
		n.Content[0].Kind == yaml.ScalarNode && n.Content[0].ShortTag() == "!!null"
}

// convert turns a parsed document into one ready to send.
func convert(node *yaml.Node) (*Document, error) {
	var raw document
	if err := node.Decode(&raw); err != nil {
		return nil, err
	}
	if raw.ResourceContext.Anchor == "" {
		return nil, errors.New("no resourceContext.anchor")
	}
	label := raw.ClusterLabel
	if label == "" {
		label = raw.LabelName
	}
	spec, _ := stringKeys(raw.Spec).(map[string]any)
	keepText(node, spec, raw.ResourceContext.Anchor)
	data, err := json.Marshal(body{Metadata: raw.Metadata, ClusterLabel: label, Spec: spec, Addr: raw.Addr,
		Clusters: raw.Clusters, TLS: raw.TLS, Token: raw.Token})
	if err != nil {
		return nil, fmt.Errorf("spec cannot be sent as JSON: %w", err)
	}
	return &Document{anchor: raw.ResourceContext.Anchor, name: raw.Metadata.Name, label: label,
		spec: spec, file: raw.File, files: raw.Files, body: data}, nil
}

// textFields are the spec fields of a collection (the anchor's last segment) that are
// strings whatever YAML makes of them: a chart version 1.10 or 1, a registry password
// 0123 or a numeric username are sent as written, not as the numbers 1.1, 1, 83 or
// 1234 the API would refuse (or, for 1.10, take as another version).
var textFields = map[string][][]string{
	"apps": {{"chart", "oci"}, {"chart", "helmRepo"}, {"chart", "chart"}, {"chart", "url"},
		{"chart", "version"}, {"chart", "digest"}},
	"artifact-credentials": {{"host"}, {"username"}, {"password"}},
}

// keepText sets each of the anchor's textFields that YAML read as a number, boolean or
// timestamp back to its text in the document (null stays null: the field is unset).
func keepText(node *yaml.Node, spec map[string]any, anchor string) {
	p, _, _ := strings.Cut(anchor, "?")
	fields := textFields[path.Base(strings.Trim(p, "/"))]
	if len(fields) == 0 || spec == nil {
		return
	}
	specNode := child(node, "spec")
	for _, f := range fields {
		n, m := specNode, spec
		for i, key := range f {
			if n = child(n, key); n == nil {
				break
			}
			if i < len(f)-1 {
				if m, _ = m[key].(map[string]any); m == nil {
					break
				}
				continue
			}
			if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str" && n.ShortTag() != "!!null" {
				m[key] = n.Value
			}
		}
	}
}

// child is the value of key in mapping n (through a document and aliases), or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	for n != nil && (n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) == 1 {
			n = n.Content[0]
		} else {
			return nil
		}
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			for v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

// stringKeys turns maps with non-string keys (ports: {80: http}) into JSON objects;
// emcoctl cannot send those at all.
func stringKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = stringKeys(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = stringKeys(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stringKeys(e)
		}
		return out
	}
	return v
}

// readFile reads a document's file: relative to the working directory, as emcoctl does,
// else beside the resource file.
func (d *Document) readFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err == nil || filepath.IsAbs(name) || !errors.Is(err, os.ErrNotExist) {
		return data, err
	}
	dir := filepath.Dir(d.source)
	data, err2 := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err2, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (nor in %s)", err, dir)
	}
	return data, err2
}
