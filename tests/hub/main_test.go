// Package hub tests `temco hub`, temco's declarative front door: temco.io objects on the
// stack's hub (cluster1), reconciled into temco through its REST API and deployed to the
// clusters, status written back (docs/hub.md).
//
// The package starts its own local stack, so it runs beside the other test packages.
package hub

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	stack *testenv.Stack
	hub   client.Client // the hub cluster, as kubectl would write it
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("hub: skipped in -short mode")
		os.Exit(0)
	}
	ctrllog.SetLogger(logr.Discard()) // the test's clients log nothing worth reading
	s, err := testenv.StartStack("hub", devstack.Config{Clusters: 2, Hub: true, GitOps: true,
		Namespace: "default", TaskQueue: "temco", SearchAttributes: lifecycle.SearchAttributeTypes()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hub:", err)
		os.Exit(1)
	}
	stack = s
	code := 1
	if hub, err = hubClient(); err != nil {
		fmt.Fprintln(os.Stderr, "hub:", err)
	} else {
		code = m.Run()
	}
	s.Stop(code != 0)
	os.Exit(code)
}

func hubClient() (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", stack.Hub().Kubeconfig())
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// eventually polls check until it succeeds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := hub.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func namespace(t *testing.T, name string) {
	create(t, &corev1.Namespace{ObjectMeta: objMeta("", name)})
}
