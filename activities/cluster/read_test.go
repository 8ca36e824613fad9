package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// A gate does not read an applied object whose readiness is its existence: it takes it
// as Present and Ready, marked as taken from the apply. It reads the rest (a workload, an
// object not applied yet), and a read that is not a gate's reads everything.
func TestAGateReadsOnlyWhatCanStillBeUnready(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/configmaps/settings"):
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"default"}}`))
		case strings.HasSuffix(r.URL.Path, "/deployments/web"):
			_, _ = w.Write([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","generation":1},
				"spec":{"replicas":1},"status":{"observedGeneration":1,"replicas":1,"updatedReplicas":0,"availableReplicas":0}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	cn, err := (&Clients{}).conn(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for gvk, resource := range map[schema.GroupVersionKind]string{{Version: "v1", Kind: "ConfigMap"}: "configmaps",
		{Group: "apps", Version: "v1", Kind: "Deployment"}: "deployments"} {
		cn.mapped.Store(gvk, &meta.RESTMapping{GroupVersionKind: gvk, Scope: meta.RESTScopeNamespace,
			Resource: gvk.GroupVersion().WithResource(resource)})
	}
	c := &client{conn: cn}
	object := func(group, kind, name, status string) appctx.ResourceStatus {
		return appctx.ResourceStatus{Ref: appctx.Ref{Group: group, Version: "v1", Kind: kind, Namespace: "default", Name: name}, Status: status}
	}
	placements := func() []*appctx.ClusterApp {
		return []*appctx.ClusterApp{{App: "web", Resources: []appctx.ResourceStatus{
			object("", "ConfigMap", "settings", lifecycle.ResApplied),
			object("apps", "Deployment", "web", lifecycle.ResApplied),
			object("", "ConfigMap", "later", lifecycle.ResPending),
		}}}
	}
	read := func(how reading) ([]string, []appctx.Live, lifecycle.ClusterResult) {
		mu.Lock()
		got = nil
		mu.Unlock()
		p := placements()
		res := c.read(context.Background(), nil, p, how)
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got), p[0].Live, res
	}

	paths, live, res := read(reading{gate: true})
	if want := []string{"/apis/apps/v1/namespaces/default/deployments/web", "/api/v1/namespaces/default/configmaps/later"}; !slices.Equal(paths, want) {
		t.Errorf("the gate read %v, want %v", paths, want)
	}
	if want := (appctx.Live{State: appctx.LivePresent, Ready: true, Applied: true}); live[0] != want {
		t.Errorf("the applied ConfigMap: %+v, want %+v", live[0], want)
	}
	if live[1].State != appctx.LivePresent || live[1].Ready || live[1].Applied || live[2].State != appctx.LiveNotPresent {
		t.Errorf("what the gate read: %+v", live[1:])
	}
	if res.Done != 2 || res.NotReady != 2 {
		t.Errorf("the gate counted %+v", res)
	}

	paths, live, _ = read(reading{})
	if len(paths) != 3 || live[0].Applied || live[0].State != appctx.LivePresent || !live[0].Ready {
		t.Errorf("a status read read %v and found %+v", paths, live)
	}
}
