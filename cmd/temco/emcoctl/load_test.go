package emcoctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write creates a file in dir and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sent describes each document as "anchor body".
func sent(docs []*Document) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.anchor+" "+string(d.body))
	}
	return out
}

const project = "version: emco/v2\nresourceContext:\n  anchor: projects\nmetadata :\n  name: p\n"

func TestLoadReadsDocumentsAsEmcoctlDoes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string
		values []string // contents of the values files; none: no templating
		want   []string // "anchor body" per document
	}{{
		name: "a licence header before the first --- and a trailing --- are no documents",
		file: "# SPDX-License-Identifier: Apache-2.0\n# Copyright (c) 2022\n\n---\n" + project + "---\n",
		want: []string{`projects {"metadata":{"name":"p"}}`},
	}, {
		name: "a header on top of the first document, --- followed by comments only, and --- --- are no documents",
		file: "# SPDX-License-Identifier: Apache-2.0\n" + project + "---\n# nothing here\n---\n---\n" + project,
		want: []string{`projects {"metadata":{"name":"p"}}`, `projects {"metadata":{"name":"p"}}`},
	}, {
		name: "unknown keys are ignored at every level",
		file: "kind: Project\nversion: emco/v2\nresourceContext:\n  anchor: projects\n  scope: all\nmetadata:\n  name: p\n  labels: {a: b}\n  Name: ignored\n",
		want: []string{`projects {"metadata":{"name":"p"}}`},
	}, {
		name: "metadata's optional fields and spec only when set; resourceContext, file and version never",
		file: "version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: p, description: d, userData1: u1, userData2: u2}\nspec: {a: 1}\nfile: f.txt\n" +
			"---\nresourceContext: {anchor: projects}\nmetadata: {name: q, description: ''}\nspec: {}\n",
		want: []string{
			`projects {"metadata":{"name":"p","description":"d","userData1":"u1","userData2":"u2"},"spec":{"a":1}}`,
			`projects {"metadata":{"name":"q"}}`,
		},
	}, {
		name: "an action sends the empty metadata; a label its clusterLabel, or the older label-name",
		file: "resourceContext:\n  anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/d/approve\n" +
			"---\nresourceContext: {anchor: cluster-providers/cp/clusters/c/labels}\nclusterLabel: edge\n" +
			"---\nresourceContext: {anchor: cluster-providers/cp/clusters/c/labels}\nlabel-name: core\n",
		want: []string{
			`projects/p/composite-apps/ca/v1/deployment-intent-groups/d/approve {"metadata":{"name":""}}`,
			`cluster-providers/cp/clusters/c/labels {"metadata":{"name":""},"clusterLabel":"edge"}`,
			`cluster-providers/cp/clusters/c/labels {"metadata":{"name":""},"clusterLabel":"core"}`,
		},
	}, {
		name: "a policy agent's addr, and temco's clusters, tls and token beside it",
		file: "resourceContext: {anchor: policy/agents/a}\naddr: 10.0.0.9:9090\nclusters:\n  - {clusterProvider: cp, cluster: c1}\n" +
			"tls:\n  ca: |\n    PEM\n  serverName: agent.edge\ntoken: t0k3n\n",
		want: []string{`policy/agents/a {"metadata":{"name":""},"addr":"10.0.0.9:9090","clusters":[{"clusterProvider":"cp","cluster":"c1"}],` +
			`"tls":{"ca":"PEM\n","serverName":"agent.edge"},"token":"t0k3n"}`},
	}, {
		name: "YAML 1.2 values: yes stays a string, ints stay ints, any scalar fills a string field",
		file: "version: 2\nresourceContext: {anchor: projects}\nmetadata: {name: 123}\nspec: {on: yes, n: 10, f: 1.5, t: true, z: ~, level: \"0\"}\n",
		want: []string{`projects {"metadata":{"name":"123"},"spec":{"f":1.5,"level":"0","n":10,"on":"yes","t":true,"z":null}}`},
	}, {
		name: "maps with non-string keys are sent with string keys",
		file: "resourceContext: {anchor: projects}\nmetadata: {name: p}\nspec: {80: top, ports: {443: https}, list: [{1: one}]}\n",
		want: []string{`projects {"metadata":{"name":"p"},"spec":{"80":"top","list":[{"1":"one"}],"ports":{"443":"https"}}}`},
	}, {
		name: "without values files {{ }} is not a template",
		file: "resourceContext: {anchor: projects}\nmetadata: {name: p, description: '{{ .Project }}'}\n",
		want: []string{`projects {"metadata":{"name":"p","description":"{{ .Project }}"}}`},
	}, {
		name:   "with values the root is the values map, and a missing key prints <no value>",
		file:   "resourceContext: {anchor: projects}\nmetadata: {name: '{{ .Project }}', description: '{{ .Missing }}'}\n",
		values: []string{"    Project: p\n"},
		want:   []string{`projects {"metadata":{"name":"p","description":"\u003cno value\u003e"}}`},
	}, {
		name:   "range over a values list generates documents",
		file:   "# SPDX\n{{- range .Apps }}\n---\nresourceContext: {anchor: projects/{{ $.Project }}/composite-apps/ca/v1/apps}\nmetadata: {name: {{ . }}}\n{{- end }}\n",
		values: []string{"Project: p\nApps: [a, b]\n"},
		want: []string{
			`projects/p/composite-apps/ca/v1/apps {"metadata":{"name":"a"}}`,
			`projects/p/composite-apps/ca/v1/apps {"metadata":{"name":"b"}}`,
		},
	}, {
		name:   "values files merge in order: maps key by key at any depth, later files win otherwise",
		file:   "resourceContext: {anchor: projects}\nmetadata: {name: '{{ .A.x }}-{{ .A.y }}-{{ .A.deep.k }}-{{ .B }}-{{ .C }}'}\n",
		values: []string{"A: {x: 1, y: 1, deep: {k: old, j: kept}}\nB: [list]\n", "A: {y: 2, deep: {k: new}}\nB: b\nC: c\n"},
		want:   []string{`projects {"metadata":{"name":"1-2-new-b-c"}}`},
	}, {
		name:   "only the first document of a values file counts",
		file:   "resourceContext: {anchor: projects}\nmetadata: {name: '{{ .Project }}'}\n",
		values: []string{"Project: first\n---\nProject: second\n"},
		want:   []string{`projects {"metadata":{"name":"first"}}`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var values []string
			for i, v := range tc.values {
				values = append(values, write(t, dir, "values"+string(rune('0'+i))+".yaml", v))
			}
			docs, err := Load([]string{write(t, dir, "resources.yaml", tc.file)}, values)
			if err != nil {
				t.Fatal(err)
			}
			if got := sent(docs); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("documents:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestLoadRefusesBadFilesNamingTheFileAndDocument(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string
		values string // a values file's content, when not ""
		want   []string
	}{
		{"a spec that is not a map", project + "---\nresourceContext: {anchor: projects}\nspec: [a]\n", "",
			[]string{"resources.yaml", "document 2 (line 6)", "!!seq"}},
		{"files that is not a list", project + "---\n" + project + "---\nresourceContext: {anchor: projects}\nfiles: a.txt\n", "",
			[]string{"resources.yaml", "document 3", "[]string"}},
		{"metadata that is not a map", "resourceContext: {anchor: projects}\nmetadata: p\n", "",
			[]string{"resources.yaml", "document 1", "!!str"}},
		{"a document that is a word", project + "---\noops\n", "", []string{"document 2"}},
		{"a duplicate key", "resourceContext: {anchor: projects}\nspec: {a: 1, a: 2}\n", "", []string{"document 1", "already defined"}},
		{"invalid YAML", project + "---\nresourceContext: {anchor: projects\n", "", []string{"resources.yaml", "document 2"}},
		{"a document without an anchor", project + "---\nmetadata: {name: p}\n", "", []string{"resources.yaml", "document 2", "no resourceContext.anchor"}},
		{"a spec JSON cannot carry", "resourceContext: {anchor: projects}\nspec: {x: .inf}\n", "", []string{"document 1", "JSON"}},
		{"a template that does not parse", "metadata: {name: {{ .Oops }\n", "A: 1\n", []string{"resources.yaml", "unexpected"}},
		{"a template that fails to run", "metadata: {name: {{ .Empty.Deeper }}}\n", "Empty: ~\n", []string{"resources.yaml", "nil pointer"}},
		{"a values file that is not YAML", project, "a: [\n", []string{"values.yaml"}},
		{"an empty values file", project, "# nothing\n", []string{"values.yaml", "no YAML document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var values []string
			if tc.values != "" {
				values = []string{write(t, dir, "values.yaml", tc.values)}
			}
			docs, err := Load([]string{write(t, dir, "resources.yaml", tc.file)}, values)
			if err == nil || docs != nil {
				t.Fatalf("loaded %d documents, error %v: want an error and nothing to send", len(docs), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestLoadReadsEveryFileAndNumbersDocumentsAcrossThem(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.yaml", project+"---\n"+project)
	b := write(t, dir, "b.yaml", "# header only\n---\nresourceContext: {anchor: cluster-providers}\nmetadata: {name: cp}\n")
	docs, err := Load([]string{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, filepath.Base(d.source)+":"+d.anchor+":"+string(rune('0'+d.index)))
	}
	if want := "a.yaml:projects:1 a.yaml:projects:2 b.yaml:cluster-providers:3"; strings.Join(got, " ") != want {
		t.Errorf("documents %v, want %s", got, want)
	}
}
