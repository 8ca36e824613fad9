package diagnostics

import (
	"strings"
	"testing"
)

func refusedDIG() Declaration {
	return Declaration{Object: "DeploymentIntentGroup/shopping/dig", Kind: "DeploymentIntentGroup", Namespace: "shopping", Name: "dig",
		Generation: 3, Project: "shopping", Path: "/v2/projects/shopping/composite-apps/shop/v1/deployment-intent-groups/dig",
		Message: `composite profile "prof" does not exist`}
}

// Every field is checked against its shape and bound, and the error names the field.
func TestDeclarationValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Declaration)
		want   string // "": valid
	}{
		{"a refused DIG", func(*Declaration) {}, ""},
		{"a cluster-scoped kind without namespace, project or path", func(d *Declaration) {
			d.Object, d.Kind, d.Namespace, d.Name, d.Project, d.Path = "Project/shopping", "Project", "", "shopping", "", ""
		}, ""},
		{"the longest message", func(d *Declaration) { d.Message = strings.Repeat("é", MaxMessageLen/2) }, ""},
		{"a message over 4 KiB", func(d *Declaration) { d.Message = strings.Repeat("x", MaxMessageLen+1) }, "message is 4097 bytes long: 4096 at most"},
		{"no object", func(d *Declaration) { d.Object = "" }, "object is required"},
		{"an object with a space", func(d *Declaration) { d.Object = "DeploymentIntentGroup/shopping/a b" }, "character 33 is not printable ASCII"},
		{"an object too long for an owner", func(d *Declaration) { d.Object = strings.Repeat("a", MaxObjectLen+1) }, "object is 253 bytes long: 252 at most"},
		{"no kind", func(d *Declaration) { d.Kind = "" }, "kind is required"},
		{"no name", func(d *Declaration) { d.Name = "" }, "name is required"},
		{"a namespace with a slash", func(d *Declaration) { d.Namespace = "a/b" }, `namespace "a/b" has a '/'`},
		{"a namespace too long", func(d *Declaration) { d.Namespace = strings.Repeat("n", 64) }, "namespace is 64 bytes long: 63 at most"},
		{"an object that is not kind/namespace/name", func(d *Declaration) { d.Object = "DeploymentIntentGroup/other/dig" },
			`object "DeploymentIntentGroup/other/dig" is not its kind, namespace and name: want "DeploymentIntentGroup/shopping/dig"`},
		{"a negative generation", func(d *Declaration) { d.Generation = -1 }, "generation -1 is negative"},
		{"a project too long", func(d *Declaration) { d.Project = strings.Repeat("p", MaxProjectLen+1) }, "project is 254 bytes long"},
		{"a project with a newline", func(d *Declaration) { d.Project = "a\nb" }, "project \"a\\nb\" holds a control character"},
		{"a path outside the API", func(d *Declaration) { d.Path = "/projects/shopping" }, "is not a path of the REST API"},
		{"a path with a space", func(d *Declaration) { d.Path = "/v2/projects/a b" }, "path \"/v2/projects/a b\": character 15 is not printable ASCII"},
		{"a path too long", func(d *Declaration) { d.Path = "/v2/" + strings.Repeat("p", MaxPathLen) }, "path is 1028 bytes long: 1024 at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := refusedDIG()
			tc.change(&d)
			err := d.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestOwnerIsHubAndObject(t *testing.T) {
	d := refusedDIG()
	if got := d.Owner(); got != "hub:DeploymentIntentGroup/shopping/dig" {
		t.Errorf("owner %q", got)
	}
	if got := ObjectOf("Cluster", "", "c1"); got != "Cluster/c1" {
		t.Errorf("a cluster-scoped object is %q", got)
	}
}
