package sfcclient

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/controllers/storetest"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

const (
	chainDIG  = "/projects/p/composite-apps/chain/v1/deployment-intent-groups/d"
	clientDIG = "/projects/p/composite-apps/client/v1/deployment-intent-groups/cd"
)

// memStore is an in-memory sfc.Docs; documents are created a second apart, in put order.
type memStore struct{ storetest.Docs }

func (m memStore) put(t *testing.T, id, kind string, spec any, fields map[string]string) {
	t.Helper()
	name := id[strings.LastIndex(id, "/")+1:]
	body, err := json.Marshal(model.Resource[any]{Metadata: model.Metadata{Name: name}, Spec: spec})
	require.NoError(t, err)
	created := time.Unix(int64(len(m.Docs)), 0)
	if old, ok := m.Docs[id]; ok { // a replace keeps the creation time, as the store does
		created = old.Created
	}
	m.Docs[id] = &store.Doc{ID: id, Parent: id[:strings.LastIndex(id[:strings.LastIndex(id, "/")], "/")], Kind: kind, Name: name,
		Body: string(body), Fields: fields, Created: created}
}

func (m memStore) selector(t *testing.T, name, end string, pod, ns map[string]string) {
	m.put(t, sfc.ChainID(chainDIG, "ch")+"/client-selectors/"+name, sfc.KindClientSelector, sfc.ClientSelectorSpec{ChainEnd: end,
		PodSelector: metav1.LabelSelector{MatchLabels: pod}, NamespaceSelector: metav1.LabelSelector{MatchLabels: ns}},
		map[string]string{sfc.FieldChainEnd: end})
}

// world is a project with chain "ch" (its left end's selectors: "other" for namespaces
// labelled team=b, "wider" for sfc=head alone, then "exact" for sfc=head,team=a), a
// client DIG in logical cloud "left" (labels sfc=head, team=a) and its sfc client "web"
// on the chain's left end.
func world(t *testing.T) memStore {
	m := memStore{storetest.Docs{}}
	m.put(t, "/projects/p/logical-clouds/left", model.KindLogicalCloud, model.LogicalCloudSpec{Level: "0",
		Labels: map[string]string{"sfc": "head", "team": "a"}}, nil)
	m.put(t, clientDIG, model.KindDIG, model.DIGSpec{LogicalCloud: "left"}, nil)
	m.put(t, sfc.ChainID(chainDIG, "ch"), sfc.KindChain, sfc.ChainSpec{ChainType: "Routing", Namespace: "default"}, nil)
	m.selector(t, "right", sfc.EndRight, map[string]string{"sfc": "tail"}, map[string]string{"sfc": "head"})
	m.selector(t, "other", sfc.EndLeft, map[string]string{"sfc": "other"}, map[string]string{"team": "b"})
	m.selector(t, "wider", sfc.EndLeft, map[string]string{"sfc": "head", "role": "client"}, map[string]string{"sfc": "head"})
	m.selector(t, "exact", sfc.EndLeft, map[string]string{"sfc": "exact"}, map[string]string{"sfc": "head", "team": "a"})
	m.put(t, clientDIG+"/sfc-clients/web", KindClient, client(sfc.EndLeft), nil)
	return m
}

func client(end string) ClientSpec {
	return ClientSpec{ChainEnd: end, SfcIntent: "ch", CompositeApp: "chain", CompositeAppVersion: "v1", DeploymentIntentGroup: "d",
		App: "web", WorkloadResource: "web", ResourceType: "Deployment"}
}

func fake(clusters ...string) *contracttest.Fake {
	return &contracttest.Fake{
		In: contract.Input{Project: "p", CompositeApp: "client", CompositeAppVersion: "v1", DeploymentIntentGroup: "cd",
			Controller: "sfcclient", Intent: "clients", Operation: contract.OpUpdate},
		AppList: []contract.App{{Name: "web", Clusters: clusters}, {Name: "db", Clusters: clusters}},
		Objects: map[string][]contract.Resource{"web": {{APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
			Manifest: json.RawMessage(`{"spec":{"selector":{"matchLabels":{"app":"web"}}}}`)}}},
	}
}

func run(m memStore, v contract.Context) error {
	return (&controller{store: m}).Run(context.Background(), v)
}

// The first selector (in creation order) whose namespace labels the cloud carries wins:
// "wider", not "exact" created after it, nor "other" whose labels the cloud lacks; its pod
// labels go to the workload on every cluster of the app.
func TestFirstMatchingSelectorLabelsTheWorkload(t *testing.T) {
	f := fake("p+c1", "p+c2")
	require.NoError(t, run(world(t), f))
	require.Len(t, f.Edits, 1)
	e := f.Edits[0]
	assert.Equal(t, contract.Edit{Op: contract.EditPatch, App: "web", Kind: "Deployment", Name: "web", Type: contract.PatchMerge,
		Data: json.RawMessage(`{"spec":{"template":{"metadata":{"labels":{"role":"client","sfc":"head"}}}}}`)}, e)
}

func TestTheClientsEndDecides(t *testing.T) {
	m := world(t)
	m.put(t, clientDIG+"/sfc-clients/web", KindClient, client(sfc.EndRight), nil)
	f := fake("p+c1")
	require.NoError(t, run(m, f))
	require.Len(t, f.Edits, 1)
	assert.JSONEq(t, `{"spec":{"template":{"metadata":{"labels":{"sfc":"tail"}}}}}`, string(f.Edits[0].Data))
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*testing.T, memStore)
		apps  []contract.App
		where string
		want  string
	}{
		{"no sfc clients", func(_ *testing.T, m memStore) { delete(m.Docs, clientDIG+"/sfc-clients/web") }, nil, "",
			`the deployment intent group names controller sfcclient (intent "clients") but has no sfc-clients`},
		{"no such chain", func(t *testing.T, m memStore) {
			sp := client(sfc.EndLeft)
			sp.SfcIntent = "nope"
			m.put(t, clientDIG+"/sfc-clients/web", KindClient, sp, nil)
		}, nil, "", `sfc client "web": the left end of network chain "nope" (composite app chain version v1, deployment intent group d): there is no such network chain`},
		{"no selector of the end", func(_ *testing.T, m memStore) { delete(m.Docs, sfc.ChainID(chainDIG, "ch")+"/client-selectors/right") }, nil, "right",
			`sfc client "web": the right end of network chain "ch" (composite app chain version v1, deployment intent group d) has no client selectors`},
		{"no selector matches", func(t *testing.T, m memStore) {
			m.put(t, "/projects/p/logical-clouds/left", model.KindLogicalCloud, model.LogicalCloudSpec{Level: "0", Labels: map[string]string{"team": "c"}}, nil)
		}, nil, "", `sfc client "web": the left end of network chain "ch" (composite app chain version v1, deployment intent group d): ` +
			`no client selector's namespace labels (other {team=b}, wider {sfc=head}, exact {sfc=head,team=a}) are all among the labels of logical cloud "left" {team=c}`},
		{"no logical cloud", func(_ *testing.T, m memStore) { delete(m.Docs, "/projects/p/logical-clouds/left") }, nil, "",
			`the deployment intent group's logical cloud "left" does not exist`},
		{"an app the deployment lacks", nil, []contract.App{{Name: "db", Clusters: []string{"p+c1"}}}, "",
			`sfc client "web" names app "web", which the deployment does not have`},
		{"a label leaving the selector", func(t *testing.T, m memStore) {
			m.selector(t, "wider", sfc.EndLeft, map[string]string{"app": "client"}, map[string]string{"sfc": "head"})
		}, nil, "", `sfc client "web": label app=client would make the pods of Deployment "web" of app "web" on cluster p+c1 leave its selector (app=web)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := world(t)
			if tc.edit != nil {
				tc.edit(t, m)
			}
			if tc.where != "" {
				m.put(t, clientDIG+"/sfc-clients/web", KindClient, client(tc.where), nil)
			}
			f := fake("p+c1")
			if tc.apps != nil {
				f.AppList = tc.apps
			}
			err := run(m, f)
			var r *contract.Refusal
			require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
			assert.Equal(t, tc.want, r.Message)
			assert.Empty(t, f.Edits)
		})
	}
}

// EMCO errors out reading a workload absent on one of the app's clusters; temco refuses
// with the cluster's name.
func TestWorkloadMissingOnOneClusterIsRefused(t *testing.T) {
	f := fake("p+c1", "p+c2")
	v := &missingOn{Fake: f, cluster: "p+c2"}
	err := run(world(t), v)
	var r *contract.Refusal
	require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
	assert.Equal(t, `sfc client "web": Deployment "web" of app "web" is not on cluster p+c2`, r.Message)
}

type missingOn struct {
	*contracttest.Fake
	cluster string
}

func (m *missingOn) Resources(ctx context.Context, app, cluster string) ([]contract.Resource, error) {
	if cluster == m.cluster {
		return nil, nil
	}
	return m.Fake.Resources(ctx, app, cluster)
}

func TestValidateClient(t *testing.T) {
	for _, tc := range []struct {
		edit func(*ClientSpec)
		want string
	}{
		{func(*ClientSpec) {}, ""},
		{func(s *ClientSpec) { s.ChainEnd = "" }, `spec.chainEnd must be "left" or "right", not ""`},
		{func(s *ClientSpec) { s.SfcIntent = "" }, "spec.sfcIntent is required"},
		{func(s *ClientSpec) { s.CompositeAppVersion = "" }, "spec.compositeAppVersion is required"},
		{func(s *ClientSpec) { s.DeploymentIntentGroup = "a/b" }, `spec.deploymentIntentGroup "a/b" is invalid`},
		{func(s *ClientSpec) { s.WorkloadResource = "" }, "spec.workloadResource is required"},
		{func(s *ClientSpec) { s.ResourceType = "Service" }, `spec.resourceType "Service" is not a kind of workload`},
	} {
		sp := client(sfc.EndLeft)
		tc.edit(&sp)
		err := validateClient(sp)
		if tc.want == "" {
			assert.NoError(t, err)
			continue
		}
		assert.ErrorContains(t, err, tc.want, fmt.Sprintf("%+v", sp))
	}
}

func TestTerminateHasNothingToDo(t *testing.T) {
	f := fake("p+c1")
	f.In.Operation = contract.OpTerminate
	require.NoError(t, run(memStore{}, f))
	assert.Empty(t, f.Edits)
}
