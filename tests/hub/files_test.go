package hub

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/dev/testenv"
)

// A chart changed in the ConfigMap a composite app reads it from is deployed: the hub
// watches the ConfigMaps and Secrets its objects read, so the change is taken within
// seconds, not at the 5-minute recheck (the deadline below is shorter than that).
func TestAChartChangedInItsConfigMapIsDeployed(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	files := &corev1.ConfigMap{ObjectMeta: objMeta("shopping", "watched-files"),
		BinaryData: map[string][]byte{"web.tgz": versionedWeb("0.1.0"), "profile.tgz": testenv.Profile("replicas: 1\n")}}
	d := &v1.DeploymentIntentGroup{ObjectMeta: objMeta("shopping", "watched"), Spec: v1.DeploymentIntentGroupSpec{
		CompositeApp: "watched", CompositeAppVersion: "v1", CompositeProfile: "prof", Version: "r1", LogicalCloud: "default",
		Placement: []v1.AppPlacement{{App: "web", AllOf: []v1.AllOf{{ClusterMatch: v1.ClusterMatch{ClusterProvider: "local", ClusterLabel: "edge"}}}}},
		State:     v1.StateInstantiated}}
	create(t, files, &v1.CompositeApp{ObjectMeta: objMeta("shopping", "watched-v1"), Spec: v1.CompositeAppSpec{Named: v1.Named{Name: "watched"}, Version: "v1",
		Apps: []v1.App{{Name: "web", ChartFrom: &v1.KeyRef{Name: "watched-files", Key: "web.tgz"}}},
		Profiles: []v1.CompositeProfile{{Name: "prof", Profiles: []v1.AppProfile{{Name: "web-profile", App: "web",
			ArchiveFrom: &v1.KeyRef{Name: "watched-files", Key: "profile.tgz"}}}}}}}, d)
	eventually(t, 3*time.Minute, "watched instantiated", deployed(t, d, 1, "v0.1.0"))

	files.BinaryData["web.tgz"] = versionedWeb("0.2.0")
	if err := hub.Update(ctx, files); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the new chart deployed", deployed(t, d, 2, "v0.2.0"))
	deleteDIG(t, "watched")
}
