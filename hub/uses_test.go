package hub

import (
	"context"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// A DIG's configuration includes its hub CompositeApp's: when the DIG is seen before the
// CompositeApp (one commit applies both; the kinds' informers are independent), it must
// wait rather than deploy as if REST declared the composite app, or the CompositeApp's
// arrival would update what was just instantiated (found by tests/hub under load).
func TestCompositeAppHashWaitsForACompositeAppNotSeenYet(t *testing.T) {
	const caPath = "/projects/p1/composite-apps/shop/v1"
	accepted := &v1.CompositeApp{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "shop", Generation: 2},
		Spec: v1.CompositeAppSpec{Version: "v1"}}
	accepted.Status.ObservedGeneration, accepted.Status.AppliedHash = 2, "cafe"
	accepted.Status.Conditions = []metav1.Condition{{Type: v1.Accepted, Status: metav1.ConditionTrue, Reason: "Accepted"}}
	pending := accepted.DeepCopy()
	pending.Status.ObservedGeneration = 1
	for _, c := range []struct {
		name    string
		objs    []client.Object
		owner   string // the composite app's owner in temco; "-" when temco has none
		want    string
		waitFor string // a 409 whose message holds this
	}{
		{name: "hub CompositeApp accepted", objs: []client.Object{accepted}, owner: "-", want: "cafe"},
		{name: "hub CompositeApp not accepted yet", objs: []client.Object{pending}, owner: "hub:CompositeApp/p1/shop", waitFor: "not accepted yet"},
		{name: "declared over REST", owner: "", want: ""},
		{name: "declared on the hub, not in the cache yet", owner: "hub:CompositeApp/p1/shop", waitFor: "waits for CompositeApp/p1/shop"},
		{name: "not in temco yet", owner: "-", waitFor: "not in temco yet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := newFakeAPI(t)
			if c.owner != "-" {
				api.seed(caPath, c.owner, map[string]any{"metadata": map[string]any{"name": "shop"}, "spec": map[string]any{"compositeAppVersion": "v1"}})
			}
			r := &Reconciler{Kube: newKube(t, append(c.objs, binding("p1", "p1"))...), API: api.client(), Events: &fakeEvents{}}
			got, err := r.compositeAppHash(context.Background(), "p1", dig())
			if c.waitFor != "" {
				ref, ok := IsRefusal(err)
				if !ok || ref.Code != http.StatusConflict || !strings.Contains(ref.Message, c.waitFor) {
					t.Fatalf("got %q, %v; want a 409 saying %q", got, err, c.waitFor)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
