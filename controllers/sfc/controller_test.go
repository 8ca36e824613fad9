package sfc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/storetest"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/ctxedit"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

const testDIG = "/projects/p/composite-apps/ca/v1/deployment-intent-groups/d"

// memStore is an in-memory Docs; documents are created a second apart, in put order.
type memStore struct{ storetest.Docs }

// Put stores a resource as the API does; fields are its queryable attributes.
func (m memStore) Put(t *testing.T, coll, kind, name string, spec any, fields map[string]string) string {
	t.Helper()
	body, err := json.Marshal(model.Resource[any]{Metadata: model.Metadata{Name: name}, Spec: spec})
	require.NoError(t, err)
	id := coll + "/" + name
	created := time.Unix(int64(len(m.Docs)), 0)
	if old, ok := m.Docs[id]; ok { // a replace keeps the creation time, as the store does
		created = old.Created
	}
	m.Docs[id] = &store.Doc{ID: id, Parent: coll[:strings.LastIndex(coll, "/")], Kind: kind, Name: name, Body: string(body),
		Fields: fields, Created: created}
	return id
}

// chainStore holds chain "ch": links slb (left-net → dyn1) and ngfw (dyn1 → right-net),
// a client selector per end and a left provider network.
func chainStore(t *testing.T) memStore {
	m := memStore{storetest.Docs{}}
	ch := m.Put(t, testDIG+"/network-chains", KindChain, "ch", ChainSpec{ChainType: ChainTypeRouting, Namespace: "default"}, nil)
	m.Put(t, ch+"/links", KindLink, "to-ngfw", link("ngfw", "dyn1", "right-net", "sfc-link=ngfw").Spec, nil)
	m.Put(t, ch+"/links", KindLink, "from-slb", link("slb", "left-net", "dyn1", "sfc-link=slb").Spec, nil)
	for _, s := range []Named[ClientSelectorSpec]{selector("head", EndLeft, "head", "head"), selector("tail", EndRight, "tail", "tail")} {
		m.Put(t, ch+"/client-selectors", KindClientSelector, s.Name, s.Spec, map[string]string{FieldChainEnd: s.Spec.ChainEnd})
	}
	m.Put(t, ch+"/provider-networks", KindProviderNetwork, "pnet", network("pnet", EndLeft, "172.30.10.2", "172.30.10.0/24").Spec, nil)
	return m
}

func deployment(name string) contract.Resource {
	return contract.Resource{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Manifest: json.RawMessage(
		fmt.Sprintf(`{"kind":"Deployment","metadata":{"name":%q},"spec":{"selector":{"matchLabels":{"app":%[1]q}}}}`, name))}
}

// perCluster is a contract.Context whose apps' objects differ by cluster ("app/cluster").
type perCluster struct {
	*contracttest.Fake
	objects map[string][]contract.Resource
}

func (p *perCluster) Resources(ctx context.Context, app, cluster string) ([]contract.Resource, error) {
	if objs, ok := p.objects[app+"/"+cluster]; ok {
		return objs, nil
	}
	return p.Fake.Resources(ctx, app, cluster)
}

func fake(apps ...contract.App) *contracttest.Fake {
	objs := map[string][]contract.Resource{}
	for _, a := range apps {
		objs[a.Name] = []contract.Resource{deployment(a.Name)}
	}
	return &contracttest.Fake{In: contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "d",
		Controller: "sfc", Intent: "chains", Operation: contract.OpInstantiate}, AppList: apps, Objects: objs}
}

func run(m memStore, v contract.Context) error {
	return (&controller{store: m}).Run(context.Background(), v)
}

func refusal(t *testing.T, err error) string {
	t.Helper()
	var r *contract.Refusal
	require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
	return r.Message
}

// The chain goes where both apps run (c1, c2; not c3): its NetworkChaining goes in the app
// sfc adds there, EMCO's network-chain-intents, and each link's label to its Deployment's
// pods there.
func TestChainGoesWhereEveryAppRuns(t *testing.T) {
	f := fake(contract.App{Name: "slb", Clusters: []string{"p+c3", "p+c1", "p+c2"}}, contract.App{Name: "ngfw", Clusters: []string{"p+c2", "p+c1"}})
	require.NoError(t, run(chainStore(t), f))
	require.Len(t, f.Edits, 4)
	assert.Equal(t, contract.Edit{Op: contract.EditAddApp, App: ChainingApp, Clusters: []string{"p+c1", "p+c2"}}, f.Edits[0])
	add := f.Edits[1]
	assert.Equal(t, contract.EditAddResource, add.Op)
	assert.Equal(t, ChainingApp, add.App)
	assert.Nil(t, add.Clusters, "the only chain covers all the app's clusters")
	var nc networkChaining
	require.NoError(t, json.Unmarshal(add.Data, &nc))
	assert.Equal(t, "ch", nc.Metadata.Name)
	assert.Equal(t, "net=left-net,sfc-link=slb,net=dyn1,sfc-link=ngfw,net=right-net", nc.Spec.RoutingSpec.NetworkChain)
	require.Len(t, nc.Spec.RoutingSpec.Left, 1)
	assert.Equal(t, "pnet", nc.Spec.RoutingSpec.Left[0].NetworkName)
	assert.Equal(t, map[string]string{"sfc": "head"}, nc.Spec.RoutingSpec.Left[0].PodSelector.MatchLabels)
	assert.Equal(t, map[string]string{"sfc": "tail"}, nc.Spec.RoutingSpec.Right[0].NamespaceSelector.MatchLabels)

	slb, ngfw := f.Edits[2], f.Edits[3]
	assert.Equal(t, contract.Edit{Op: contract.EditPatch, App: "slb", Clusters: []string{"p+c1", "p+c2"}, Kind: "Deployment", Name: "slb",
		Type: contract.PatchMerge, Data: json.RawMessage(`{"spec":{"template":{"metadata":{"labels":{"sfc-link":"slb"}}}}}`)}, slb)
	assert.Nil(t, ngfw.Clusters, "ngfw runs on exactly the chain's clusters: an app-wide patch")
	assert.JSONEq(t, `{"spec":{"template":{"metadata":{"labels":{"sfc-link":"ngfw"}}}}}`, string(ngfw.Data))
}

func TestEveryChainOfTheDIGIsPlannedWhateverTheIntentName(t *testing.T) {
	m := chainStore(t)
	ch2 := m.Put(t, testDIG+"/network-chains", KindChain, "ch2", ChainSpec{ChainType: ChainTypeRouting, Namespace: "default"}, nil)
	m.Put(t, ch2+"/links", KindLink, "only", link("ngfw", "a", "b", "sfc-link2=ngfw").Spec, nil)
	m.Put(t, ch2+"/provider-networks", KindProviderNetwork, "l", network("l", EndLeft, "1.2.3.4", "").Spec, nil)
	m.Put(t, ch2+"/provider-networks", KindProviderNetwork, "r", network("r", EndRight, "1.2.3.5", "").Spec, nil)
	f := fake(contract.App{Name: "slb", Clusters: []string{"p+c1"}}, contract.App{Name: "ngfw", Clusters: []string{"p+c1"}})
	f.In.Intent = "some-other-name"
	require.NoError(t, run(m, f))
	var chains []string
	for _, e := range f.Edits {
		if e.Op == contract.EditAddResource {
			var nc networkChaining
			require.NoError(t, json.Unmarshal(e.Data, &nc))
			chains = append(chains, e.App+":"+nc.Metadata.Name)
		}
	}
	assert.Equal(t, []string{ChainingApp + ":ch", ChainingApp + ":ch2"}, chains)
	assert.Len(t, f.Edits, 6)
}

func TestRefusals(t *testing.T) {
	both := []contract.App{{Name: "slb", Clusters: []string{"p+c1"}}, {Name: "ngfw", Clusters: []string{"p+c1"}}}
	for _, tc := range []struct {
		name  string
		store func(*testing.T) memStore
		view  func() contract.Context
		want  string
	}{
		{"no chains", func(*testing.T) memStore { return memStore{} }, func() contract.Context { return fake(both...) },
			`the deployment intent group names controller sfc (intent "chains") but has no network-chains`},
		{"no shared cluster", chainStore, func() contract.Context {
			return fake(contract.App{Name: "slb", Clusters: []string{"p+c1"}}, contract.App{Name: "ngfw", Clusters: []string{"p+c2", "p+c3"}})
		}, `network chain "ch": no cluster runs every app of its links (slb on [p+c1]; ngfw on [p+c2, p+c3])`},
		{"an app the deployment lacks", chainStore, func() contract.Context { return fake(both[0]) },
			`network chain "ch": link "to-ngfw" names app "ngfw", which the deployment does not have`},
		{"a workload missing on one cluster", chainStore, func() contract.Context {
			f := fake(contract.App{Name: "slb", Clusters: []string{"p+c1", "p+c2"}}, contract.App{Name: "ngfw", Clusters: []string{"p+c1", "p+c2"}})
			return &perCluster{Fake: f, objects: map[string][]contract.Resource{"ngfw/p+c2": nil}}
		}, `network chain "ch", link "to-ngfw": Deployment "ngfw" of app "ngfw" is not on cluster p+c2`},
		{"a label leaving the selector", func(t *testing.T) memStore {
			m := chainStore(t)
			m.Put(t, ChainID(testDIG, "ch")+"/links", KindLink, "to-ngfw", link("ngfw", "dyn1", "right-net", "app=firewall").Spec, nil)
			return m
		}, func() contract.Context { return fake(both...) },
			`network chain "ch", link "to-ngfw": label app=firewall would make the pods of Deployment "ngfw" of app "ngfw" on cluster p+c1 leave its selector (app=ngfw)`},
		{"links not in one chain", func(t *testing.T) memStore {
			m := chainStore(t)
			m.Put(t, ChainID(testDIG, "ch")+"/links", KindLink, "to-ngfw", link("ngfw", "x", "right-net", "sfc-link=ngfw").Spec, nil)
			return m
		}, func() contract.Context { return fake(both...) },
			`network chain "ch": its links form 2 separate chains, starting at networks left-net, x: they must form one`},
		{"an end with nothing", func(t *testing.T) memStore {
			m := chainStore(t)
			delete(m.Docs, ChainID(testDIG, "ch")+"/client-selectors/tail")
			return m
		}, func() contract.Context { return fake(both...) },
			`network chain "ch": its right end has neither client selectors nor provider networks`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.view()
			assert.Equal(t, tc.want, refusal(t, run(tc.store(t), v)))
			if f, ok := v.(*contracttest.Fake); ok {
				assert.Empty(t, f.Edits, "a refusal records nothing")
			}
		})
	}
}

func TestTerminateHasNothingToDo(t *testing.T) {
	f := fake()
	f.In.Operation = contract.OpTerminate
	require.NoError(t, run(memStore{}, f))
	assert.Empty(t, f.Edits)
}

// Records are read in creation order, whatever their names.
func TestListReadsInCreationOrder(t *testing.T) {
	m := chainStore(t)
	sels, err := ClientSelectors(context.Background(), m, ChainID(testDIG, "ch"), EndLeft)
	require.NoError(t, err)
	require.Len(t, sels, 1)
	assert.Equal(t, "head", sels[0].Name)
	ch := ChainID(testDIG, "ch")
	m.Put(t, ch+"/client-selectors", KindClientSelector, "a-later", selector("", EndLeft, "x", "y").Spec, map[string]string{FieldChainEnd: EndLeft})
	sels, err = ClientSelectors(context.Background(), m, ch, EndLeft)
	require.NoError(t, err)
	names := []string{}
	for _, s := range sels {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"head", "a-later"}, names)
}

// temco's context accepts the edits: the chain's objects land on the chain's clusters
// only, and a Deployment whose pod template has no labels gets them.
func TestEditsApplyToTheContext(t *testing.T) {
	objs := map[string]*appctx.App{}
	for _, name := range []string{"slb", "ngfw"} {
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON([]byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q},
			"spec":{"selector":{"matchLabels":{"app":%[1]q}},"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, name))))
		o, err := appctx.NewObject(u)
		require.NoError(t, err)
		objs[name] = &appctx.App{Name: name, Objects: []appctx.Object{o}}
	}
	s, err := ctxedit.New([]string{"slb", "ngfw"}, objs, map[string][][]string{"slb": {{"p+c1"}, {"p+c2"}}, "ngfw": {{"p+c2"}}},
		func(string) map[string]string { return nil })
	require.NoError(t, err)
	f := fake(contract.App{Name: "slb", Clusters: []string{"p+c1", "p+c2"}}, contract.App{Name: "ngfw", Clusters: []string{"p+c2"}})
	require.NoError(t, run(chainStore(t), f))
	require.NoError(t, s.Apply("sfc", contract.TypeAction, f.Edits))

	slb, chains := s.Apps["slb"], s.Apps[ChainingApp]
	require.NotNil(t, chains, "the app sfc adds")
	assert.Equal(t, []string{"slb", "ngfw", ChainingApp}, s.Order, "added after the DIG's apps, as EMCO's apporder")
	assert.Equal(t, []string{"p+c2"}, chains.Clusters(), "no NetworkChaining where ngfw does not run")
	require.Len(t, chains.ObjectsOn("p+c2"), 1)
	assert.Equal(t, "NetworkChaining", chains.ObjectsOn("p+c2")[0].Kind)
	assert.Contains(t, slb.ObjectsOn("p+c2")[0].Manifest, `"labels":{"sfc-link":"slb"}`)
	assert.NotContains(t, slb.ObjectsOn("p+c1")[0].Manifest, "sfc-link")
	assert.Contains(t, s.Apps["ngfw"].Objects[0].Manifest, `"labels":{"sfc-link":"ngfw"}`)
}
