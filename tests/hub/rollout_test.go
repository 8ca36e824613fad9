package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A DIG declared with a rollout strategy rolls out stage by stage: its status names the
// stage waiting for an approval, the operator approves it over REST (a decision on the
// running operation, which the hub's ownership leaves open), and the rollout ends on
// every cluster.
func TestDeclaredRolloutWaitsForAnApprovalGivenOverREST(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	d := dig("staged", "prof", "staged")
	d.Spec.RolloutStrategy = &apiextensionsv1.JSON{Raw: []byte(`{"stages":[{"name":"canary","clusters":["cluster1"]},
		{"name":"rest","before":[{"type":"approval"}]}]}`)}
	create(t, d)
	get := func() error { return hub.Get(ctx, client.ObjectKey{Namespace: "shopping", Name: "staged"}, d) }
	eventually(t, 3*time.Minute, "the second stage waits for its approval", func() error {
		if err := get(); err != nil {
			return err
		}
		if d.Status.RolloutStage != "rest: WaitingForApproval" {
			return fmt.Errorf("rollout stage %q", d.Status.RolloutStage)
		}
		return nil
	})
	if got := strings.Join(messages(t), ","); got != "staged," {
		t.Errorf("messages %s before the approval: want cluster1 only", got)
	}
	if code := restJSON(t, http.MethodPost, d.Status.Path+"/rollout/approve", map[string]any{"stage": "rest"}, nil); code != http.StatusOK {
		t.Fatalf("approve over REST: %d", code)
	}
	eventually(t, 3*time.Minute, "the rollout done", func() error {
		if err := get(); err != nil {
			return err
		}
		if err := ready(&d.Status.CommonStatus); err != nil {
			return err
		}
		if d.Status.RolloutStage != "Succeeded" || d.Status.Clusters.Total != 2 || d.Status.Clusters.Deployed != 2 {
			return fmt.Errorf("rollout %q clusters %+v", d.Status.RolloutStage, d.Status.Clusters)
		}
		if got := strings.Join(messages(t), ","); got != "staged,staged" {
			return fmt.Errorf("messages %s", got)
		}
		return nil
	})
	deleteDIG(t, "staged")
}
