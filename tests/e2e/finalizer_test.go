package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// A chart's object held by a finalizer no controller removes (its operator is gone) keeps
// the terminate waiting, as Kubernetes means it to; the DIG's status names the object and
// the finalizer it waits for, and once someone removes it the terminate ends.
func TestATerminateWaitingForAFinalizerSaysWhich(t *testing.T) {
	chart := testenv.Chart("held", "", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: [example.com/hold]
data:
  a: b
`})
	d := newDeployment(t, app{name: "held", chart: chart, placement: clusterNamed("cluster1")})
	d.create()
	release := func() { // what the gone operator would have done
		_, _ = dynClient(t, stack.Clusters[0]).Resource(configMaps).Namespace("default").Patch(context.Background(), "held",
			types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	}
	t.Cleanup(func() { release(); d.terminateIfRunning() })
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	d.operate(lifecycle.OpTerminate)
	want := "waiting for its deletion: finalizers example.com/hold"
	s := d.await("the object's warning", 2*time.Minute, "?status=deployed&output=all", func(s status) bool {
		for _, a := range s.Apps {
			for _, c := range a.Clusters {
				for _, r := range c.Resources {
					if r.Name == "held" && strings.Contains(r.Warning, want) {
						return true
					}
				}
			}
		}
		return false
	})
	if s.Status != lifecycle.StatusTerminating {
		t.Errorf("status %s while the object waits: want Terminating", s.Status)
	}
	release()
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if cm := liveObject(t, 0, configMaps, "held"); cm != nil {
		t.Errorf("after the terminate the ConfigMap is still there: %v", cm["metadata"])
	}
}
