package devstack

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The custom resources every local cluster serves, in the files of crds/ (hand-written; a
// file added there adds its kinds here) or of the modules in .bin/crds/<folder> (named
// "<folder>/<file>"; those files hold more kinds than temco's controllers produce, which
// are not listed).
var wantCRDs = []struct {
	file, group, version, kind, plural string
	shortNames                         []string
	openSpec                           bool // spec and status kept as sent, status a subresource
	clusterScoped                      bool
	alsoServed                         []string // versions served besides version, which is stored
}{
	// temco's own (hubapi), for `temco hub`
	{file: "temco/temco.io_deploymentintentgroups.yaml", group: "temco.io", version: "v1alpha1", kind: "DeploymentIntentGroup",
		plural: "deploymentintentgroups", shortNames: []string{"dig"}},
	{file: "temco/temco.io_clusters.yaml", group: "temco.io", version: "v1alpha1", kind: "Cluster", plural: "clusters", clusterScoped: true},
	{file: "multus/networks-crd.yaml", group: "k8s.cni.cncf.io", version: "v1", kind: "NetworkAttachmentDefinition",
		plural: "network-attachment-definitions", shortNames: []string{"net-attach-def"}},
	{file: "k8s.plugin.opnfv.org.yaml", group: "k8s.plugin.opnfv.org", version: "v1alpha1", kind: "Network", plural: "networks", openSpec: true},
	{file: "k8s.plugin.opnfv.org.yaml", group: "k8s.plugin.opnfv.org", version: "v1alpha1", kind: "ProviderNetwork", plural: "providernetworks", openSpec: true},
	{file: "k8s.plugin.opnfv.org.yaml", group: "k8s.plugin.opnfv.org", version: "v1alpha1", kind: "NetworkChaining", plural: "networkchainings", openSpec: true},
	// ca-certs' distribution
	{file: "cert-manager/cert-manager.io_clusterissuers.yaml", group: "cert-manager.io", version: "v1", kind: "ClusterIssuer",
		plural: "clusterissuers", shortNames: []string{"ciss"}, clusterScoped: true},
	{file: istioCRDs, group: "networking.istio.io", version: "v1beta1", kind: "ProxyConfig", plural: "proxyconfigs"},
	{file: "kncc.k8sappconfig.com.gitlab.com.yaml", group: "kncc.k8sappconfig.com.gitlab.com", version: "v1alpha1", kind: "ConfigCtrl",
		plural: "configctrls"},
	// dtc's swc
	{file: "batch.sdewan.akraino.org.yaml", group: "batch.sdewan.akraino.org", version: "v1alpha1", kind: "CNFService", plural: "cnfservices"},
	{file: "batch.sdewan.akraino.org.yaml", group: "batch.sdewan.akraino.org", version: "v1alpha1", kind: "SdewanApplication",
		plural: "sdewanapplications"},
	// dtc's its
	{file: istioCRDs, group: "networking.istio.io", version: "v1", kind: "Gateway", plural: "gateways",
		shortNames: []string{"gw"}, alsoServed: []string{"v1alpha3", "v1beta1"}},
	{file: istioCRDs, group: "networking.istio.io", version: "v1", kind: "ServiceEntry", plural: "serviceentries",
		shortNames: []string{"se"}, alsoServed: []string{"v1alpha3", "v1beta1"}},
	{file: istioCRDs, group: "networking.istio.io", version: "v1", kind: "DestinationRule", plural: "destinationrules",
		shortNames: []string{"dr"}, alsoServed: []string{"v1alpha3", "v1beta1"}},
	{file: istioCRDs, group: "networking.istio.io", version: "v1", kind: "VirtualService", plural: "virtualservices",
		shortNames: []string{"vs"}, alsoServed: []string{"v1alpha3", "v1beta1"}},
	{file: istioCRDs, group: "security.istio.io", version: "v1", kind: "AuthorizationPolicy", plural: "authorizationpolicies",
		shortNames: []string{"ap"}, alsoServed: []string{"v1beta1"}},
}

const istioCRDs = "istio/customresourcedefinitions.gen.yaml"

func TestCRDFilesDefineTheExpectedKinds(t *testing.T) {
	bin, err := filepath.Abs("../../../.bin") // internal/dev/devstack
	if err != nil {
		t.Fatal(err)
	}
	files, err := ClusterCRDFiles(bin)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*unstructured.Unstructured{} // by file and kind
	handWritten, wantHandWritten := 0, 0
	for _, f := range files {
		for _, crd := range f.CRDs {
			group := str(t, crd, "spec", "group")
			if !strings.Contains(f.Name, "/") {
				handWritten++
				if f.Name != group+".yaml" {
					t.Errorf("%s defines %s in group %s: one file per group, named after it", f.Name, crd.GetName(), group)
				}
			}
			got[f.Name+" "+str(t, crd, "spec", "names", "kind")] = crd
		}
	}
	for _, w := range wantCRDs {
		if !strings.Contains(w.file, "/") {
			wantHandWritten++
		}
	}
	if handWritten != wantHandWritten {
		t.Errorf("crds/ defines %d kinds, want %d", handWritten, wantHandWritten)
	}
	for _, w := range wantCRDs {
		crd := got[w.file+" "+w.kind]
		if crd == nil {
			t.Errorf("%s does not define %s", w.file, w.kind)
			continue
		}
		if want := w.plural + "." + w.group; crd.GetName() != want {
			t.Errorf("%s is named %s, want %s", w.kind, crd.GetName(), want)
		}
		if s := str(t, crd, "spec", "names", "plural"); s != w.plural {
			t.Errorf("%s plural %q, want %q", w.kind, s, w.plural)
		}
		scope := "Namespaced"
		if w.clusterScoped {
			scope = "Cluster"
		}
		if s := str(t, crd, "spec", "scope"); s != scope {
			t.Errorf("%s scope %q, want %s", w.kind, s, scope)
		}
		short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
		if !slices.Equal(short, w.shortNames) {
			t.Errorf("%s short names %v, want %v", w.kind, short, w.shortNames)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if len(versions) != 1+len(w.alsoServed) {
			t.Errorf("%s has %d versions, want %d", w.kind, len(versions), 1+len(w.alsoServed))
			continue
		}
		var v *unstructured.Unstructured // the stored version
		for _, ver := range versions {
			ver := &unstructured.Unstructured{Object: ver.(map[string]any)}
			served, _, _ := unstructured.NestedBool(ver.Object, "served")
			storage, _, _ := unstructured.NestedBool(ver.Object, "storage")
			name := str(t, ver, "name")
			switch {
			case name == w.version && served && storage:
				v = ver
			case !served || storage || !slices.Contains(w.alsoServed, name):
				t.Errorf("%s version %s (served %v, stored %v), want %s stored and %v served", w.kind, name, served, storage, w.version, w.alsoServed)
			}
		}
		if v == nil {
			t.Errorf("%s does not serve and store %s", w.kind, w.version)
			continue
		}
		props := []string{"schema", "openAPIV3Schema", "properties"}
		if w.openSpec {
			for _, field := range []string{"spec", "status"} {
				open, _, _ := unstructured.NestedBool(v.Object, append(props, field, "x-kubernetes-preserve-unknown-fields")...)
				if !open {
					t.Errorf("%s drops unknown fields of %s", w.kind, field)
				}
			}
			if _, ok, _ := unstructured.NestedMap(v.Object, "subresources", "status"); !ok {
				t.Errorf("%s has no status subresource", w.kind)
			}
		}
		if w.kind == "NetworkAttachmentDefinition" {
			if s := str(t, v, append(props, "spec", "properties", "config", "type")...); s != "string" {
				t.Errorf("NetworkAttachmentDefinition spec.config has type %q, want string", s)
			}
		}
	}
}

func TestDecodeCRDsRefusesOtherKinds(t *testing.T) {
	_, err := decodeCRDs([]byte("# header\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"))
	if err == nil || !strings.Contains(err.Error(), "document 2") {
		t.Fatalf("got %v, want an error naming document 2", err)
	}
}

func TestEstablishedNeedsTheConditionTrue(t *testing.T) {
	for _, tc := range []struct {
		conditions []any
		want       bool
	}{
		{nil, false},
		{[]any{map[string]any{"type": "NamesAccepted", "status": "True"}}, false},
		{[]any{map[string]any{"type": "Established", "status": "False"}}, false},
		{[]any{map[string]any{"type": "NamesAccepted", "status": "True"}, map[string]any{"type": "Established", "status": "True"}}, true},
	} {
		crd := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": tc.conditions}}}
		if got := established(crd); got != tc.want {
			t.Errorf("established(%v) = %v, want %v", tc.conditions, got, tc.want)
		}
	}
}

func str(t *testing.T, u *unstructured.Unstructured, fields ...string) string {
	t.Helper()
	s, _, err := unstructured.NestedString(u.Object, fields...)
	if err != nil {
		t.Errorf("%s: %v", strings.Join(fields, "."), err)
	}
	return s
}
