package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/dev/devstack"
)

// actions are the states a DIG's history recorded, in order (GET …/status; path: /v2/...).
func actions(t *testing.T, path string) []string {
	s, err := rest().Status(context.Background(), strings.TrimPrefix(path, "/v2"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range s.States.Actions {
		out = append(out, a.State)
	}
	return out
}

// deleteDIG deletes a DIG object and waits until it and its objects are gone.
func deleteDIG(t *testing.T, name string) {
	ctx := context.Background()
	if err := hub.Delete(ctx, &v1.DeploymentIntentGroup{ObjectMeta: objMeta("shopping", name)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, name+" gone", func() error {
		if err := hub.Get(ctx, client.ObjectKey{Namespace: "shopping", Name: name}, &v1.DeploymentIntentGroup{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// The hub killed while it writes a DIG's resources, then the worker killed while the
// instantiate the restarted hub started runs: the DIG ends Instantiated once — one
// approval, one instantiate, revision 1 — and its status converges.
func TestHubAndWorkerKilledMidReconcileDoNothingTwice(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	create(t, dig("restart", "prof", "r"))
	stack.HubProc.Kill()
	if err := stack.StartHub(ctx); err != nil {
		t.Fatal(err)
	}
	var d v1.DeploymentIntentGroup
	get := func() error { return hub.Get(ctx, client.ObjectKey{Namespace: "shopping", Name: "restart"}, &d) }
	eventually(t, 2*time.Minute, "the instantiate started", func() error {
		if err := get(); err != nil {
			return err
		}
		if d.Status.Operation != "instantiate" && d.Status.State != "Instantiated" {
			return fmt.Errorf("operation %q state %q", d.Status.Operation, d.Status.State)
		}
		return nil
	})
	stack.Worker.Kill()
	if err := stack.StartWorker(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "restart instantiated", func() error {
		if err := get(); err != nil {
			return err
		}
		if err := ready(&d.Status.CommonStatus); err != nil {
			return err
		}
		if d.Status.State != "Instantiated" || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("state %q observed %d of %d", d.Status.State, d.Status.ObservedGeneration, d.Generation)
		}
		return nil
	})
	if d.Status.Revision != 1 {
		t.Errorf("revision %d, want 1: an operation ran twice", d.Status.Revision)
	}
	if got := strings.Join(actions(t, d.Status.Path), ","); got != "Created,Approved,Instantiated" {
		t.Errorf("the DIG's history %s, want Created,Approved,Instantiated", got)
	}
	deleteDIG(t, "restart")
}

// startHub starts a temco hub of the test's own that calls the REST API at api, and waits
// until it is ready (it may not hold the lease yet).
func startHub(t *testing.T, name, api string) *devstack.Proc {
	t.Helper()
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := append(stack.Env(), "KUBECONFIG="+stack.Hub().Kubeconfig(), "TEMCO_API="+api,
		"TEMCO_HUB_NAMESPACE="+devstack.HubNamespace, "TEMCO_HUB_HEALTH_ADDR=127.0.0.1:"+strconv.Itoa(port))
	p, err := devstack.StartProc("temco hub "+name, filepath.Join(stack.DataDir(), "logs", "hub"+name+".log"), stack.Self(), []string{"hub"}, env)
	if err != nil {
		t.Fatal(err)
	}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	if err := devstack.WaitReady(context.Background(), p, time.Minute, func(ctx context.Context) error { return devstack.HTTPOK(ctx, readyz) }); err != nil {
		p.Stop(15 * time.Second)
		t.Fatal(err)
	}
	return p
}

// A hub killed after temco took its update and before it recorded the answer (here: killed
// by a proxy in front of the API the moment the 202 arrives) is followed by one that finds
// the update taken: the DIG is updated once, revision 2, not twice.
func TestHubKilledAfterTemcoTookAnUpdateDoesNotAskAgain(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	create(t, dig("lost", "prof", "one"))
	var d v1.DeploymentIntentGroup
	get := func() error { return hub.Get(ctx, client.ObjectKey{Namespace: "shopping", Name: "lost"}, &d) }
	settled := func(revision int) func() error {
		return func() error {
			if err := get(); err != nil {
				return err
			}
			if err := ready(&d.Status.CommonStatus); err != nil {
				return err
			}
			if d.Status.Revision != revision || d.Status.ObservedGeneration != d.Generation {
				return fmt.Errorf("revision %d observed %d of %d", d.Status.Revision, d.Status.ObservedGeneration, d.Generation)
			}
			return nil
		}
	}
	eventually(t, 3*time.Minute, "lost instantiated", settled(1))

	api, err := url.Parse(strings.TrimSuffix(stack.API, "/v2"))
	if err != nil {
		t.Fatal(err)
	}
	var victim atomic.Pointer[devstack.Proc]
	var killed atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(api)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodPost && strings.HasSuffix(r.Request.URL.Path, "/deployment-intent-groups/lost/update") &&
			r.StatusCode == http.StatusAccepted {
			victim.Load().Kill()
			killed.Store(true)
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	defer front.Close()
	stack.HubProc.Kill()
	third := startHub(t, "3", front.URL)
	defer third.Stop(15 * time.Second)
	victim.Store(third)

	if err := get(); err != nil {
		t.Fatal(err)
	}
	d.Spec.OverrideValues[0].Values["message"] = "two"
	if err := hub.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the hub killed as temco took its update", func() error {
		if !killed.Load() {
			return errors.New("no update taken yet")
		}
		return nil
	})
	if err := stack.StartHub(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "lost updated", settled(2))
	if got := messages(t); strings.Join(got, ",") != "two,two" {
		t.Errorf("web-config messages %v, want two on both clusters", got)
	}
	if d.Status.Requested != nil || d.Status.Operation != "update" {
		t.Errorf("requested %+v operation %q, want none and update", d.Status.Requested, d.Status.Operation)
	}
	deleteDIG(t, "lost")
}

// Two hubs run; one holds the lease and works. Killed, the other takes the lease over
// and reconciles what is declared next.
func TestASecondHubTakesOverWhenTheLeaderDies(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	second := startHub(t, "2", strings.TrimSuffix(stack.API, "/v2"))
	defer second.Stop(15 * time.Second)
	holder := func() string {
		var l coordinationv1.Lease
		if err := hub.Get(ctx, client.ObjectKey{Namespace: devstack.HubNamespace, Name: "temco-hub"}, &l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	first := holder()
	if first == "" {
		t.Fatal("no hub holds the lease")
	}
	stack.HubProc.Kill()
	create(t, &v1.Project{ObjectMeta: objMeta("", "takeover")})
	eventually(t, 2*time.Minute, "the second hub reconciles", func() error {
		var p v1.Project
		if err := hub.Get(ctx, client.ObjectKey{Name: "takeover"}, &p); err != nil {
			return err
		}
		return ready(&p.Status)
	})
	if h := holder(); h == first || h == "" {
		t.Errorf("lease holder %q after the leader died (was %q)", h, first)
	}
	if c := restStatus(t, "/v2/projects/takeover"); c != http.StatusOK {
		t.Errorf("GET /v2/projects/takeover: %d", c)
	}
	// The stack's own hub again, for the tests after this one.
	second.Stop(15 * time.Second)
	if err := stack.StartHub(ctx); err != nil {
		t.Fatal(err)
	}
}
