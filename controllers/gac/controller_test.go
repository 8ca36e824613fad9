package gac

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/storetest"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

const (
	testDIG    = "/projects/p/composite-apps/ca/v1/deployment-intent-groups/d"
	testIntent = testDIG + "/generic-k8s-intents/gi"
)

// memStore is an in-memory controllers.Docs.
type memStore struct{ storetest.Docs }

// put stores a resource as the API does: its id is the collection's path and its name,
// its parent the collection's owner.
func (m memStore) put(t *testing.T, coll, kind, name string, spec any, blob []byte) string {
	t.Helper()
	body, err := json.Marshal(model.Resource[any]{Metadata: model.Metadata{Name: name}, Spec: spec})
	require.NoError(t, err)
	id := coll + "/" + name
	m.Docs[id] = &store.Doc{ID: id, Parent: coll[:strings.LastIndex(coll, "/")], Kind: kind, Name: name, Body: string(body), Blob: blob}
	return id
}

// intent starts a store holding the intent "gi".
func intent(t *testing.T) memStore {
	m := memStore{storetest.Docs{}}
	m.put(t, testDIG+"/generic-k8s-intents", KindIntent, "gi", model.Empty{}, nil)
	return m
}

func (m memStore) resource(t *testing.T, name string, sp ResourceSpec, template string) string {
	return m.put(t, testIntent+"/resources", KindResource, name, sp, []byte(template))
}

func (m memStore) customize(t *testing.T, res, name string, sp CustomizationSpec, files ...api.NamedFile) {
	var blob []byte
	if len(files) > 0 {
		blob = api.EncodeFiles(files)
	}
	m.put(t, res+"/customizations", KindCustomization, name, sp, blob)
}

func file(name, content string) api.NamedFile {
	return api.NamedFile{Name: name, Content: []byte(content)}
}

// everywhere is a customization of all the app's clusters.
func everywhere() CustomizationSpec {
	return CustomizationSpec{ClusterSpecific: flagFalse, ClusterInfo: ClusterInfo{Scope: scopeLabel, ClusterProvider: "p1", Mode: modeAllow}}
}

func newObject(kind, name string) ResourceSpec {
	apiVersion := "v1"
	if kind == "Deployment" {
		apiVersion = "apps/v1"
	}
	return ResourceSpec{App: "web", NewObject: flagTrue, ResourceGVK: GVK{APIVersion: apiVersion, Kind: kind, Name: name}}
}

func existing(kind, name string) ResourceSpec {
	sp := newObject(kind, name)
	sp.NewObject = flagFalse
	return sp
}

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"app","image":"app:1"},{"name":"side","image":"side:1"}]}}}}`

// fake is a context with app "web" on three clusters: p1+c1 and p2+c1 carry label edge.
func fake(objects ...contract.Resource) *contracttest.Fake {
	return &contracttest.Fake{
		In: contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "d",
			Controller: "gac", Type: contract.TypeAction, Intent: "gi", Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: []string{"p2+c1", "p1+c1", "p1+c2"}}},
		Objects: map[string][]contract.Resource{"web": objects},
		ClusterOf: map[string][]contract.Cluster{
			"p1": {{Provider: "p1", Name: "c1", Labels: []string{"edge"}}, {Provider: "p1", Name: "c2"}},
			"p2": {{Provider: "p2", Name: "c1", Labels: []string{"edge"}}},
		},
	}
}

func run(t *testing.T, st memStore, f *contracttest.Fake) {
	t.Helper()
	require.NoError(t, (&controller{store: st}).Run(context.Background(), f))
}

// manifest decodes an added object.
func manifest(t *testing.T, e contract.Edit) map[string]any {
	t.Helper()
	require.Equal(t, contract.EditAddResource, e.Op)
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &m))
	return m
}

func TestNewConfigMapFromTwoFilesOnEveryCluster(t *testing.T) {
	st := intent(t)
	res := st.resource(t, "cm-game", newObject("ConfigMap", "cm-game"), "")
	sp := everywhere()
	sp.ConfigMapOptions.DataKeyOptions = []KeyOption{{FileName: "data-game.yaml", KeyName: "game.properties"}}
	st.customize(t, res, "c", sp, file("data-game.yaml", "lives=5\n"), file("info.json", `{"a":1}`))
	f := fake()
	run(t, st, f)

	require.Len(t, f.Edits, 1)
	assert.Nil(t, f.Edits[0].Clusters, "all the app's clusters")
	assert.Equal(t, "web", f.Edits[0].App)
	assert.Equal(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm-game"},
		"data": map[string]any{"game.properties": "lives=5\n", "info.json": `{"a":1}`}}, manifest(t, f.Edits[0]))
}

func TestNewSecretEncodesFilesAndKeepsTheTemplate(t *testing.T) {
	st := intent(t)
	res := st.resource(t, "secret-auth", newObject("Secret", "secret-auth"),
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-auth\ntype: kubernetes.io/basic-auth\ndata:\n  extra: YmFyCg==\n")
	sp := everywhere()
	sp.SecretOptions.DataKeyOptions = []KeyOption{{FileName: "exp.txt", KeyName: "EXPIRATION"}}
	sp.PatchType, sp.PatchJSON = patchJSON, []map[string]any{{"op": "add", "path": "/data/USER_NAME", "value": "YWRtaW4="}}
	st.customize(t, res, "c", sp, file("exp.txt", "30d"))
	gen := st.resource(t, "secret-gen", newObject("Secret", "secret-gen"), "")
	st.customize(t, gen, "c", everywhere(), file("token", "s3cr3t"))
	f := fake()
	run(t, st, f)

	require.Len(t, f.Edits, 2)
	auth := manifest(t, f.Edits[0])
	assert.Equal(t, "kubernetes.io/basic-auth", auth["type"])
	assert.Equal(t, map[string]any{"extra": "YmFyCg==", "EXPIRATION": base64.StdEncoding.EncodeToString([]byte("30d")),
		"USER_NAME": "YWRtaW4="}, auth["data"])
	generated := manifest(t, f.Edits[1])
	assert.Equal(t, "Opaque", generated["type"])
	assert.Equal(t, map[string]any{"token": base64.StdEncoding.EncodeToString([]byte("s3cr3t"))}, generated["data"])
}

func TestNewObjectFromTemplateWithJSONPatch(t *testing.T) {
	st := intent(t)
	sp := newObject("networkpolicy", "netpol-db") // EMCO's example types the kind in lower case
	sp.ResourceGVK.APIVersion = "networking.k8s.io/v1"
	res := st.resource(t, "netpol-db", sp, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: netpol-db
spec:
  podSelector:
    matchLabels:
      role: db
`)
	c := everywhere()
	c.PatchType, c.PatchJSON = patchJSON, []map[string]any{{"op": "replace", "path": "/spec/podSelector/matchLabels/role", "value": "database"}}
	st.customize(t, res, "c", c, file("dummy.yaml", "ignored"))
	f := fake()
	run(t, st, f)

	require.Len(t, f.Edits, 1)
	m := manifest(t, f.Edits[0])
	assert.Equal(t, "NetworkPolicy", m["kind"])
	assert.Equal(t, map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"role": "database"}}}, m["spec"])
}

func TestNewDeploymentMergePatchMergesContainersByName(t *testing.T) {
	st := intent(t)
	res := st.resource(t, "web", newObject("Deployment", "web"), deployment)
	c := everywhere()
	c.PatchType = patchMerge
	st.customize(t, res, "c", c, file("patch.yaml", "spec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:2\n"))
	f := fake()
	run(t, st, f)

	require.Len(t, f.Edits, 1)
	var d struct {
		Spec struct {
			Replicas int
			Template struct {
				Spec struct{ Containers []map[string]string }
			}
		}
	}
	require.NoError(t, json.Unmarshal(f.Edits[0].Data, &d))
	assert.Equal(t, 3, d.Spec.Replicas)
	assert.ElementsMatch(t, []map[string]string{{"name": "app", "image": "app:2"}, {"name": "side", "image": "side:1"}},
		d.Spec.Template.Spec.Containers, "a strategic merge keeps the other container")
}

func TestPatchExistingDeployment(t *testing.T) {
	web := contract.Resource{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Manifest: json.RawMessage(deployment)}
	t.Run("json", func(t *testing.T) {
		st := intent(t)
		res := st.resource(t, "scale", existing("Deployment", "web"), "")
		c := everywhere()
		c.PatchType, c.PatchJSON = patchJSON, []map[string]any{{"op": "replace", "path": "/spec/replicas", "value": 1}}
		st.customize(t, res, "c", c)
		f := fake(web)
		run(t, st, f)

		require.Len(t, f.Edits, 1)
		e := f.Edits[0]
		assert.Equal(t, contract.Edit{Op: contract.EditPatch, App: "web", Kind: "Deployment", Name: "web", Type: contract.PatchJSON}, withoutData(e))
		assert.JSONEq(t, `[{"op":"replace","path":"/spec/replicas","value":1}]`, string(e.Data))
	})
	t.Run("strategic, one edit per file", func(t *testing.T) {
		st := intent(t)
		res := st.resource(t, "image", existing("deployment", "web"), "")
		c := everywhere()
		c.PatchType = patchMerge
		st.customize(t, res, "c", c, file("a.yaml", "spec:\n  replicas: 2\n"), file("b.json", `{"metadata":{"labels":{"tier":"front"}}}`))
		f := fake(web)
		run(t, st, f)

		require.Len(t, f.Edits, 2)
		for _, e := range f.Edits {
			assert.Equal(t, contract.Edit{Op: contract.EditPatch, App: "web", Kind: "Deployment", Name: "web", Type: contract.PatchStrategic}, withoutData(e),
				"the kind as the context has it, not as typed")
		}
		assert.JSONEq(t, `{"spec":{"replicas":2}}`, string(f.Edits[0].Data))
		assert.JSONEq(t, `{"metadata":{"labels":{"tier":"front"}}}`, string(f.Edits[1].Data))
	})
	t.Run("missing object is skipped", func(t *testing.T) {
		st := intent(t)
		res := st.resource(t, "scale", existing("Deployment", "db"), "")
		c := everywhere()
		c.PatchType, c.PatchJSON = patchJSON, []map[string]any{{"op": "replace", "path": "/spec/replicas", "value": 1}}
		st.customize(t, res, "c", c)
		f := fake(web)
		run(t, st, f)
		assert.Empty(t, f.Edits)
	})
}

func withoutData(e contract.Edit) contract.Edit {
	e.Data = nil
	return e
}

func TestClusterSpecific(t *testing.T) {
	byName := func(provider, cluster string) ClusterInfo {
		return ClusterInfo{Scope: scopeName, ClusterProvider: provider, Cluster: cluster, Mode: modeAllow}
	}
	for _, tc := range []struct {
		name string
		info ClusterInfo
		want []string // nil: no edit at all
	}{
		{"by name", byName("p1", "c1"), []string{"p1+c1"}},
		{"by name, the provider counts", byName("p2", "c1"), []string{"p2+c1"}},
		{"by name, not a cluster of the app", byName("p1", "c9"), nil},
		{"by label of one provider", ClusterInfo{Scope: scopeLabel, ClusterProvider: "p1", ClusterLabel: "edge", Mode: modeAllow}, []string{"p1+c1"}},
		{"by a label no cluster has", ClusterInfo{Scope: scopeLabel, ClusterProvider: "p1", ClusterLabel: "core", Mode: modeAllow}, nil},
		{"deny by name matches nothing", ClusterInfo{Scope: scopeName, ClusterProvider: "p1", Cluster: "c1", Mode: modeDeny}, nil},
		{"deny by label matches nothing", ClusterInfo{Scope: scopeLabel, ClusterProvider: "p1", ClusterLabel: "edge", Mode: modeDeny}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := intent(t)
			res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "")
			st.customize(t, res, "c", CustomizationSpec{ClusterSpecific: flagTrue, ClusterInfo: tc.info}, file("k", "v"))
			f := fake()
			run(t, st, f)
			if tc.want == nil {
				assert.Empty(t, f.Edits)
				return
			}
			require.Len(t, f.Edits, 1)
			assert.Equal(t, tc.want, f.Edits[0].Clusters)
		})
	}
	t.Run("deny is ignored when not cluster-specific", func(t *testing.T) {
		st := intent(t)
		res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "")
		c := everywhere()
		c.ClusterInfo.Mode = modeDeny
		st.customize(t, res, "c", c, file("k", "v"))
		f := fake()
		run(t, st, f)
		require.Len(t, f.Edits, 1)
		assert.Nil(t, f.Edits[0].Clusters)
	})
}

func TestSeveralCustomizationsMakeOneObjectPerCluster(t *testing.T) {
	st := intent(t)
	res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "")
	st.customize(t, res, "a-all", everywhere(), file("a", "1"))
	st.customize(t, res, "b-c1", CustomizationSpec{ClusterSpecific: flagTrue, ClusterInfo: ClusterInfo{
		Scope: scopeName, ClusterProvider: "p1", Cluster: "c1", Mode: modeAllow}}, file("a", "2"), file("b", "3"))
	f := fake()
	run(t, st, f)

	require.Len(t, f.Edits, 2, "one object per set of customizations, never two on one cluster")
	assert.Equal(t, []string{"p1+c1"}, f.Edits[0].Clusters)
	assert.Equal(t, map[string]any{"a": "2", "b": "3"}, manifest(t, f.Edits[0])["data"], "applied in order, the later one replacing a key")
	assert.Equal(t, []string{"p1+c2", "p2+c1"}, f.Edits[1].Clusters)
	assert.Equal(t, map[string]any{"a": "1"}, manifest(t, f.Edits[1])["data"])
}

func TestPatchOfAnObjectThisIntentAdds(t *testing.T) {
	st := intent(t)
	a := st.resource(t, "a-cm", newObject("configmap", "cm"), "")
	st.customize(t, a, "c", CustomizationSpec{ClusterSpecific: flagTrue, ClusterInfo: ClusterInfo{
		Scope: scopeName, ClusterProvider: "p1", Cluster: "c2", Mode: modeAllow}}, file("k", "v"))
	b := st.resource(t, "b-patch", existing("ConfigMap", "cm"), "")
	c := everywhere()
	c.PatchType, c.PatchJSON = patchJSON, []map[string]any{{"op": "add", "path": "/data/x", "value": "y"}}
	st.customize(t, b, "c", c)
	f := fake()
	run(t, st, f)

	require.Len(t, f.Edits, 2)
	assert.Equal(t, contract.EditPatch, f.Edits[1].Op)
	assert.Equal(t, "ConfigMap", f.Edits[1].Kind)
	assert.Equal(t, []string{"p1+c2"}, f.Edits[1].Clusters, "only where it was added")
}

func TestNothingToDo(t *testing.T) {
	t.Run("a resource without customizations", func(t *testing.T) {
		st := intent(t)
		st.resource(t, "web", newObject("Deployment", "web"), deployment)
		f := fake()
		run(t, st, f)
		assert.Empty(t, f.Edits)
	})
	t.Run("terminate", func(t *testing.T) {
		st := intent(t)
		res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "")
		st.customize(t, res, "c", everywhere(), file("k", "v"))
		f := fake()
		f.In.Operation = contract.OpTerminate
		run(t, st, f)
		assert.Empty(t, f.Edits)
	})
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, st memStore)
		want  string
	}{
		{"missing intent", func(t *testing.T, st memStore) { delete(st.Docs, testIntent) }, `no generic-k8s-intent "gi"`},
		{"unknown app", func(t *testing.T, st memStore) {
			sp := newObject("ConfigMap", "cm")
			sp.App = "db"
			st.customize(t, st.resource(t, "cm", sp, ""), "c", everywhere(), file("k", "v"))
		}, `names app "db"`},
		{"a file's key the template has", func(t *testing.T, st memStore) {
			res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: old}\n")
			st.customize(t, res, "c", everywhere(), file("k", "v"))
		}, `already has data key "k"`},
		{"a patch renaming the object", func(t *testing.T, st memStore) {
			c := everywhere()
			c.PatchType, c.PatchJSON = patchJSON, []map[string]any{{"op": "replace", "path": "/metadata/name", "value": "other"}}
			st.customize(t, st.resource(t, "cm", newObject("ConfigMap", "cm"), ""), "c", c)
		}, `make it ConfigMap "other"`},
		{"a JSON patch that does not apply", func(t *testing.T, st memStore) {
			c := everywhere()
			c.PatchType, c.PatchJSON = patchJSON, []map[string]any{{"op": "replace", "path": "/spec/replicas", "value": 1}}
			st.customize(t, st.resource(t, "cm", newObject("ConfigMap", "cm"), ""), "c", c)
		}, "customization c"},
		{"an existing object without patch type", func(t *testing.T, st memStore) {
			st.customize(t, st.resource(t, "p", existing("Deployment", "web"), ""), "c", everywhere())
		}, "no patchType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := intent(t)
			tc.setup(t, st)
			f := fake()
			err := (&controller{store: st}).Run(context.Background(), f)
			var r *contract.Refusal
			require.True(t, errors.As(err, &r), "a refusal, not a retried error: %v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Empty(t, f.Edits)
		})
	}
}
