package gac

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/temco/temco/api"
)

func TestValidateResource(t *testing.T) {
	netpol := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: np\n"
	np := ResourceSpec{App: "web", NewObject: flagTrue, ResourceGVK: GVK{APIVersion: "networking.k8s.io/v1", Kind: "networkpolicy", Name: "np"}}
	with := func(f func(*ResourceSpec)) ResourceSpec { sp := np; f(&sp); return sp }
	for _, tc := range []struct {
		name     string
		spec     ResourceSpec
		template string
		want     string // "" when valid
	}{
		{"a template of the kind, in any case", np, netpol, ""},
		{"a ConfigMap needs no template", newObject("ConfigMap", "cm"), "", ""},
		{"an existing object needs no template", existing("Deployment", "web"), "", ""},
		{"a JSON template", newObject("Deployment", "web"), deployment, ""},
		{"a role name with a colon", with(func(s *ResourceSpec) { s.NewObject, s.ResourceGVK.Name = flagFalse, "system:np" }), "", ""},
		{"no app", with(func(s *ResourceSpec) { s.App = "" }), netpol, "spec.app is required"},
		{"newObject not a flag", with(func(s *ResourceSpec) { s.NewObject = "yes" }), netpol, `spec.newObject must be "true" or "false"`},
		{"no apiVersion", with(func(s *ResourceSpec) { s.ResourceGVK.APIVersion = "" }), netpol, "spec.resourceGVK.apiVersion"},
		{"an apiVersion with two slashes", with(func(s *ResourceSpec) { s.ResourceGVK.APIVersion = "a/b/c" }), netpol, "spec.resourceGVK.apiVersion"},
		{"no kind", with(func(s *ResourceSpec) { s.ResourceGVK.Kind = "" }), netpol, "spec.resourceGVK.kind"},
		{"a name with a slash", with(func(s *ResourceSpec) { s.ResourceGVK.Name = "a/b" }), netpol, "spec.resourceGVK.name"},
		{"a new Deployment without template", newObject("Deployment", "web"), "", `"file", the object's template, is required`},
		{"a template of another kind", with(func(s *ResourceSpec) { s.ResourceGVK.Kind = "Service" }), netpol, "is a NetworkPolicy, not the Service"},
		{"a template of another name", with(func(s *ResourceSpec) { s.ResourceGVK.Name = "other" }), netpol, `is named "np", not "other"`},
		{"a template of another apiVersion", with(func(s *ResourceSpec) { s.ResourceGVK.APIVersion = "v1" }), netpol, "has apiVersion networking.k8s.io/v1"},
		{"two documents", np, netpol + "---\n" + netpol, "more than one document"},
		{"not YAML", np, "a: [", "is not YAML or JSON"},
		{"a list", np, "- a\n", "is not an object"},
		{"no metadata.name", np, "apiVersion: v1\nkind: NetworkPolicy\n", "has no metadata.name"},
		{"Secret data not base64", newObject("Secret", "s"), "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: 'not base64!'}\n", "data.k is not base64"},
		{"ConfigMap data not strings", newObject("ConfigMap", "cm"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: 5}\n", "data.k is not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateResource(tc.spec, []byte(tc.template))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.want)
			}
		})
	}
}

func TestValidateCustomization(t *testing.T) {
	cm, secret, deploy, patchWeb := newObject("ConfigMap", "cm"), newObject("Secret", "s"), newObject("Deployment", "web"), existing("Deployment", "web")
	jsonPatch := func(ops ...map[string]any) CustomizationSpec {
		sp := everywhere()
		sp.PatchType, sp.PatchJSON = patchJSON, ops
		return sp
	}
	with := func(sp CustomizationSpec, f func(*CustomizationSpec)) CustomizationSpec { f(&sp); return sp }
	keyed := func(opts ...KeyOption) CustomizationSpec {
		sp := everywhere()
		sp.ConfigMapOptions.DataKeyOptions = opts
		return sp
	}
	files := []api.NamedFile{file("a.yaml", "spec:\n  replicas: 2\n"), file("b.yaml", "x")}
	for _, tc := range []struct {
		name  string
		spec  CustomizationSpec
		files []api.NamedFile
		res   ResourceSpec
		want  string // "" when valid
	}{
		{"data files", everywhere(), files, cm, ""},
		{"EMCO's dummy file beside a JSON patch", jsonPatch(map[string]any{"op": "replace", "path": "/spec/replicas", "value": 1}), files[1:], patchWeb, ""},
		{"remove needs no value", jsonPatch(map[string]any{"op": "remove", "path": "/spec/replicas"}), nil, patchWeb, ""},
		{"a merge patch", with(everywhere(), func(s *CustomizationSpec) { s.PatchType = patchMerge }), files[:1], patchWeb, ""},
		{"a ConfigMap merge patch file", with(keyed(KeyOption{FileName: "a.yaml", MergePatch: flagTrue}), func(s *CustomizationSpec) { s.PatchType = patchMerge }), files, cm, ""},
		{"renamed keys", keyed(KeyOption{FileName: "a.yaml", KeyName: "game.properties"}), files, cm, ""},
		{"renamed Secret keys", with(everywhere(), func(s *CustomizationSpec) {
			s.SecretOptions.DataKeyOptions = []KeyOption{{FileName: "a.yaml", KeyName: "EXPIRATION"}}
		}), files, secret, ""},
		{"cluster-specific by label", with(everywhere(), func(s *CustomizationSpec) { s.ClusterSpecific, s.ClusterInfo.ClusterLabel = flagTrue, "edge" }), nil, deploy, ""},

		{"clusterSpecific not a flag", with(everywhere(), func(s *CustomizationSpec) { s.ClusterSpecific = "" }), nil, cm, `spec.clusterSpecific must be "true" or "false"`},
		{"no scope", with(everywhere(), func(s *CustomizationSpec) { s.ClusterInfo.Scope = "" }), nil, cm, "spec.clusterInfo.scope"},
		{"no mode", with(everywhere(), func(s *CustomizationSpec) { s.ClusterInfo.Mode = "block" }), nil, cm, "spec.clusterInfo.mode"},
		{"no provider", with(everywhere(), func(s *CustomizationSpec) { s.ClusterInfo.ClusterProvider = "" }), nil, cm, "spec.clusterInfo.clusterProvider is required"},
		{"by label without label", with(everywhere(), func(s *CustomizationSpec) { s.ClusterSpecific = flagTrue }), nil, cm, "spec.clusterInfo.clusterLabel is required"},
		{"by name without name", with(everywhere(), func(s *CustomizationSpec) { s.ClusterSpecific, s.ClusterInfo.Scope = flagTrue, scopeName }), nil, cm, "spec.clusterInfo.cluster is required"},
		{"unknown patch type", with(everywhere(), func(s *CustomizationSpec) { s.PatchType = "strategic" }), nil, cm, `spec.patchType must be "json", "merge" or ""`},
		{"an existing object without patch type", everywhere(), files, patchWeb, "give patchType json or merge"},
		{"json without operations", jsonPatch(), nil, patchWeb, "needs patchJson operations"},
		{"an unknown op", jsonPatch(map[string]any{"op": "upsert", "path": "/a", "value": 1}), nil, patchWeb, `op "upsert" is not`},
		{"a path that is not a pointer", jsonPatch(map[string]any{"op": "add", "path": "a", "value": 1}), nil, patchWeb, "not a JSON pointer"},
		{"add without value", jsonPatch(map[string]any{"op": "add", "path": "/a"}), nil, patchWeb, "(add) has no value"},
		{"move without from", jsonPatch(map[string]any{"op": "move", "path": "/a"}), nil, patchWeb, "(move) needs from"},
		{"a value from temco's kv-pairs", jsonPatch(map[string]any{"op": "add", "path": "/a",
			"value": "$(http://emco-clm:9061/v2/cluster-providers/{clusterProvider}/clusters/c1/kv-pairs/kv?key=k)$"}), nil, patchWeb, ""},
		{"a value fetched from a URL", jsonPatch(map[string]any{"op": "add", "path": "/a", "value": "$(https://config.example.com/v?x=1)$"}), nil, patchWeb, ""},
		{"a URL of the customization's cluster", with(jsonPatch(map[string]any{"op": "add", "path": "/a", "value": "$(http://x/{cluster})$"}),
			func(s *CustomizationSpec) { s.ClusterInfo.Cluster = "c1" }), nil, patchWeb, ""},
		{"a URL of no cluster", jsonPatch(map[string]any{"op": "test", "path": "/a", "value": "$(http://x/{cluster})$"}), nil, patchWeb,
			"spec.patchJson[0].value is a $(URL)$ whose URL uses {cluster} but spec.clusterInfo.cluster is empty"},
		{"a URL that does not parse", jsonPatch(map[string]any{"op": "add", "path": "/a", "value": 1}, map[string]any{"op": "add", "path": "/b", "value": "$(http://a b:pw@h:x/)$"}),
			nil, patchWeb, "spec.patchJson[1].value is a $(URL)$ whose URL does not parse"},
		{"a URL of another scheme", jsonPatch(map[string]any{"op": "add", "path": "/a", "value": "$(httpx://h/)$"}), nil, patchWeb, `whose URL has scheme "httpx", not http or https`},
		{"a URL without host", jsonPatch(map[string]any{"op": "add", "path": "/a", "value": "$(http:///v)$"}), nil, patchWeb, "whose URL has no host"},
		{"the kv-pairs route without key", jsonPatch(map[string]any{"op": "add", "path": "/a",
			"value": "$(http://clm/v2/cluster-providers/p1/clusters/c1/kv-pairs/kv)$"}), nil, patchWeb, `(host clm) names kv-pairs "kv" of cluster p1+c1 without ?key=`},
		{"the kv-pairs route of a bad name", jsonPatch(map[string]any{"op": "add", "path": "/a",
			"value": "$(http://clm/v2/cluster-providers/p1/clusters/c%20d/kv-pairs/kv?key=k)$"}), nil, patchWeb, `names the kv-pairs route, but cluster in the kv-pairs path "c d" is invalid`},
		{"merge without files", with(everywhere(), func(s *CustomizationSpec) { s.PatchType = patchMerge }), nil, patchWeb, `patches as multipart parts "files"`},
		{"merge of a ConfigMap without a marked file", with(everywhere(), func(s *CustomizationSpec) { s.PatchType = patchMerge }), files, cm, `marked mergePatch "true" in spec.configMapOptions`},
		{"a merge patch that is not an object", with(everywhere(), func(s *CustomizationSpec) { s.PatchType = patchMerge }), files[1:], patchWeb, "merge patch b.yaml is not an object"},
		{"secretOptions on a ConfigMap", with(everywhere(), func(s *CustomizationSpec) {
			s.SecretOptions.DataKeyOptions = []KeyOption{{FileName: "a.yaml", KeyName: "k"}}
		}), files, cm, "spec.secretOptions does not apply to the resource's kind ConfigMap"},
		{"options on a Deployment", keyed(KeyOption{FileName: "a.yaml", KeyName: "k"}), files, deploy, "spec.configMapOptions does not apply"},
		{"an option for no file", keyed(KeyOption{FileName: "c.yaml", KeyName: "k"}), files, cm, `fileName "c.yaml" names none`},
		{"an option twice", keyed(KeyOption{FileName: "a.yaml", KeyName: "k"}, KeyOption{FileName: "a.yaml", KeyName: "l"}), files, cm, "is named twice"},
		{"an option without key", keyed(KeyOption{FileName: "a.yaml"}), files, cm, "keyName is required"},
		{"mergePatch not a flag", keyed(KeyOption{FileName: "a.yaml", KeyName: "k", MergePatch: "yes"}), files, cm, "mergePatch must be"},
		{"two files on one ConfigMap key", keyed(KeyOption{FileName: "a.yaml", KeyName: "b.yaml"}), files, cm, `both be data key "b.yaml"`},
		{"a file name that is no key", everywhere(), []api.NamedFile{file("my file", "x")}, cm, `data key "my file" is invalid`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateCustomization(tc.spec, tc.files, tc.res)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.want)
			}
		})
	}
}
