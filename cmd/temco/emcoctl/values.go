package emcoctl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// readValues reads the first YAML document of each values file and merges them in
// order: maps merge key by key, at any depth; for anything else the later file wins.
func readValues(files []string) (any, error) {
	var vals any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v any
		if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("no YAML document")
			}
			return nil, fmt.Errorf("values file %s: %w", f, err)
		}
		vals = merge(vals, v)
	}
	return vals, nil
}

// merge returns over laid on base (a copy where both are maps, else over).
func merge(base, over any) any {
	b, ok1 := base.(map[string]any)
	o, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		return over
	}
	out := make(map[string]any, len(b)+len(o))
	for k, v := range b {
		out[k] = v
	}
	for k, v := range o {
		if old, ok := out[k]; ok {
			v = merge(old, v)
		}
		out[k] = v
	}
	return out
}

// render runs a file as emcoctl does: a plain text/template (no extra functions, a
// missing key prints "<no value>") whose root is the values.
func render(file string, data []byte, vals any) ([]byte, error) {
	tmpl, err := template.New(filepath.Base(file)).Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, vals); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out.Bytes(), nil
}
