package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// bitsChart is a chart whose ConfigMap <name>-bits says which bits were rendered.
func bitsChart(name, version, bits string) []byte {
	return testenv.VersionedChart(name, version, "", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}-bits
data:
  bits: "` + bits + `"
  version: {{ .Chart.Version | quote }}
`})
}

// bits reads the ConfigMap <name>-bits on the cluster of index i ("" when absent).
func bits(t *testing.T, i int, name string) string {
	t.Helper()
	cs, err := stack.Clusters[i].Clientset()
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), name+"-bits", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["bits"]
}

// artifactsView is the status answer's artifacts.
type artifactsView struct {
	Status         string            `json:"status"`
	DeployedStatus string            `json:"deployedStatus"`
	Error          string            `json:"error"`
	Instance       string            `json:"instance"`
	Artifacts      []artifact.Status `json:"artifacts"`
}

func (v artifactsView) of(app string) artifact.Status {
	for _, a := range v.Artifacts {
		if a.App == app {
			return a
		}
	}
	return artifact.Status{}
}

func (d *deployment) artifacts() artifactsView {
	d.t.Helper()
	v := getAs[artifactsView](d.t, d.c, d.dig()+"/status?status=deployed&output=summary")
	if v.Status == "" {
		v.Status = v.DeployedStatus
	}
	return v
}

func (d *deployment) awaitArtifacts(what string, cond func(artifactsView) bool) artifactsView {
	d.t.Helper()
	return awaitValue(d.t, what, 3*time.Minute, d.artifacts, cond)
}

// setChart replaces an app's chart reference.
func (d *deployment) setChart(app string, src map[string]any) {
	d.t.Helper()
	d.c.do("PUT", d.ca()+"/apps/"+app, res(app, map[string]any{"chart": src})).must(d.t, 200)
}

// Charts from the stack's OCI registry (private: the project's credentials), its Helm
// repository and a URL instantiate; an update takes a new version; after the tag of the
// first version was moved, a rollback deploys the bits revision 1 recorded; while the
// registry is down the update retries, shown in the status, and completes once it is back.
func TestChartsByReferenceInstantiateUpdateRollBackAndRetry(t *testing.T) {
	reg, repo := stack.Registry.Address(), stack.HelmRepo.URL()
	v1 := testenv.PushChart(t, stack, bitsChart("refweb", "1.0.0", "web-A"), "charts/refweb", "1.0.0")
	apiChart := bitsChart("refapi", "1.0.0", "api-1")
	testenv.PublishChart(t, stack, apiChart, "refapi-1.0.0.tgz")
	tgz := bitsChart("reftgz", "0.1.0", "tgz-1")
	testenv.PublishChart(t, stack, tgz, "reftgz-0.1.0.tgz")
	oci := func(version string) map[string]any {
		return map[string]any{"oci": "oci://" + reg + "/charts/refweb", "version": version, "plainHTTP": true}
	}
	d := newDeployment(t,
		app{name: "refweb", source: oci("1.0.0"), placement: clusterNamed("cluster1")},
		app{name: "refapi", source: map[string]any{"helmRepo": repo, "chart": "refapi", "version": "^1"}, placement: clusterNamed("cluster1")},
		app{name: "reftgz", source: map[string]any{"url": repo + "/reftgz-0.1.0.tgz", "digest": artifact.Digest(tgz)}, placement: clusterNamed("cluster1")})
	d.beforeApps = func(d *deployment) {
		d.c.do("POST", "/projects/"+d.project+"/artifact-credentials", res("registry", map[string]any{
			"host": reg, "username": stack.Registry.User, "password": stack.Registry.Password})).must(t, 201)
	}
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	v := d.awaitArtifacts("Instantiated", func(v artifactsView) bool { return v.Status == lifecycle.StatusInstantiated })
	recordHistory(t, acc.WorkflowID, "Instantiate-charts-by-reference")
	if a := v.of("refweb"); a.Stage != artifact.StageRendered || a.Digest != v1 || a.Version != "1.0.0" || a.Blob == "" || a.Size == 0 {
		t.Errorf("refweb's artifact %+v, want Rendered pinned to %s", a, v1)
	}
	if a := v.of("refapi"); a.Stage != artifact.StageRendered || a.Digest != artifact.Digest(apiChart) || a.Version != "1.0.0" {
		t.Errorf("refapi's artifact %+v, want Rendered pinned to %s", a, artifact.Digest(apiChart))
	}
	for app, want := range map[string]string{"refweb": "web-A", "refapi": "api-1", "reftgz": "tgz-1"} {
		if got := bits(t, 0, app); got != want {
			t.Errorf("%s on cluster1: %q, want %q", app, got, want)
		}
	}

	// An update to a new version; then the first version's tag moves.
	testenv.PushChart(t, stack, bitsChart("refweb", "1.1.0", "web-B"), "charts/refweb", "1.1.0")
	d.setChart("refweb", oci("1.1.0"))
	d.operate(lifecycle.OpUpdate)
	d.awaitArtifacts("update Instantiated", func(v artifactsView) bool {
		return v.Status == lifecycle.StatusInstantiated && v.of("refweb").Version == "1.1.0"
	})
	if got := bits(t, 0, "refweb"); got != "web-B" {
		t.Fatalf("refweb after the update: %q, want web-B", got)
	}
	moved := testenv.PushChart(t, stack, bitsChart("refweb", "1.0.0", "web-A-moved"), "charts/refweb", "1.0.0")
	if moved == v1 {
		t.Fatal("the tag did not move")
	}
	d.c.do("POST", d.dig()+"/rollback", map[string]any{"spec": map[string]any{"revision": "1"}}).must(t, 202)
	v = d.awaitArtifacts("rollback Instantiated", func(v artifactsView) bool {
		return v.Status == lifecycle.StatusInstantiated && v.of("refweb").Version == "1.0.0"
	})
	if got := bits(t, 0, "refweb"); got != "web-A" {
		t.Errorf("refweb after the rollback: %q, want web-A (revision 1's bits, not the moved tag's)", got)
	}
	if a := v.of("refweb"); a.Digest != v1 {
		t.Errorf("the rollback's refweb pinned to %s, want revision 1's %s", a.Digest, v1)
	}

	// The registry goes down during an update: retried, shown, then done.
	testenv.PushChart(t, stack, bitsChart("refweb", "1.2.0", "web-C"), "charts/refweb", "1.2.0")
	stack.Registry.Stop()
	restarted := false
	defer func() {
		if !restarted {
			_ = stack.Registry.Start(context.Background())
		}
	}()
	d.setChart("refweb", oci("1.2.0"))
	acc = d.operate(lifecycle.OpUpdate)
	v = d.awaitArtifacts("refweb retrying", func(v artifactsView) bool {
		a := v.of("refweb")
		return a.Retrying && a.Attempts >= 2 && a.Error != "" && !a.NextTry.IsZero()
	})
	if v.Status == lifecycle.StatusInstantiated {
		t.Fatal("Instantiated while its registry is down")
	}
	if err := stack.Registry.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted = true
	v = d.awaitArtifacts("Instantiated after the registry is back", func(v artifactsView) bool {
		return v.Status == lifecycle.StatusInstantiated && v.of("refweb").Version == "1.2.0"
	})
	if a := v.of("refweb"); a.Retrying || a.Stage != artifact.StageRendered {
		t.Errorf("refweb once done: %+v", a)
	}
	if got := bits(t, 0, "refweb"); got != "web-C" {
		t.Errorf("refweb after the registry came back: %q, want web-C", got)
	}
	recordHistory(t, acc.WorkflowID, "Update-chart-registry-down")
}

// A profile's archive may come from a URL with its digest: the chart renders with it.
func TestAProfileByReference(t *testing.T) {
	archive := testenv.Profile("message: from-the-url-profile\n")
	if err := os.WriteFile(filepath.Join(stack.HelmRepo.Dir, "profref-profile.tar.gz"), archive, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDeployment(t, app{name: "profref", chart: webChart("profref"), placement: clusterNamed("cluster1"),
		profile: map[string]any{"url": stack.HelmRepo.URL() + "/profref-profile.tar.gz", "digest": artifact.Digest(archive)}})
	d.create()
	d.operate(lifecycle.OpInstantiate)
	v := d.awaitArtifacts("Instantiated", func(v artifactsView) bool { return v.Status == lifecycle.StatusInstantiated })
	if a := v.of(artifact.ProfileKey("profref")); a.Stage != artifact.StageRendered || a.Digest != artifact.Digest(archive) {
		t.Errorf("the profile's artifact %+v", a)
	}
	cm := liveObject(t, 0, configMaps, "profref-config")
	if msg, _, _ := unstructured.NestedString(cm, "data", "message"); msg != "from-the-url-profile" {
		t.Errorf("the chart rendered with message %q, want the URL profile's", msg)
	}
}

// A chart whose bytes are not what the repository's index says is refused: the
// instantiate fails naming both digests, its artifact is Failed and nothing is applied.
func TestATamperedChartIsRefused(t *testing.T) {
	good := bitsChart("tampered", "1.0.0", "good")
	testenv.PublishChart(t, stack, good, "tampered-1.0.0.tgz")
	evil := bitsChart("tampered", "1.0.0", "evil")
	// Replaced behind the index's back: it still names good's digest.
	if err := os.WriteFile(filepath.Join(stack.HelmRepo.Dir, "tampered-1.0.0.tgz"), evil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDeployment(t, app{name: "tampered", placement: clusterNamed("cluster1"),
		source: map[string]any{"helmRepo": stack.HelmRepo.URL(), "chart": "tampered", "version": "1.0.0"}})
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	v := d.awaitArtifacts("InstantiateFailed", func(v artifactsView) bool { return v.Status == lifecycle.StatusInstantiateFailed })
	recordHistory(t, acc.WorkflowID, "Instantiate-chart-tampered")
	for _, want := range []string{"digest mismatch", artifact.Digest(good), artifact.Digest(evil)} {
		if !strings.Contains(v.Error, want) {
			t.Errorf("error %q does not say %q", v.Error, want)
		}
	}
	if a := v.of("tampered"); a.Stage != artifact.StageFailed || !strings.Contains(a.Error, "digest mismatch") || a.Retrying {
		t.Errorf("artifact %+v, want Failed with the mismatch", a)
	}
	if got := bits(t, 0, "tampered"); got != "" {
		t.Errorf("the tampered chart was applied: %q", got)
	}
}

// imageChart is a chart whose Deployment runs image.
func imageChart(name, image string) []byte {
	return testenv.Chart(name, "", map[string]string{"d.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      initContainers: [{name: init, image: "` + image + `"}]
      containers: [{name: main, image: "` + image + `"}]
`})
}

// liveImages are the images of the Deployment name on each cluster of the stack's first two.
func liveImages(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for i := range 2 {
		img, _, _ := unstructured.NestedSlice(liveObject(t, i, deployments, name), "spec", "template", "spec", "containers")
		for _, c := range img {
			out = append(out, c.(map[string]any)["image"].(string))
		}
	}
	return out
}

// With imagePinning, a revision's images are resolved to digests once and every cluster
// runs those; an update takes what the tag names now, a rollback the digest its revision
// recorded; an image the registry does not have fails the update, the clusters untouched.
func TestImagesArePinnedToDigestsOncePerRevision(t *testing.T) {
	reg := stack.Registry.Address()
	image := reg + "/images/pinweb:1"
	first := testenv.PushImage(t, stack, "images/pinweb", "1", "first")
	d := newDeployment(t, app{name: "pinweb", chart: imageChart("pinweb", image), placement: clusterLabel("edge")})
	d.beforeApps = func(d *deployment) {
		d.c.do("POST", "/projects/"+d.project+"/artifact-credentials", res("registry", map[string]any{
			"host": reg, "username": stack.Registry.User, "password": stack.Registry.Password})).must(t, 201)
	}
	d.digSpec = map[string]any{"imagePinning": map[string]any{"enabled": true, "plainHTTP": []string{reg}}}
	d.create()
	d.operate(lifecycle.OpInstantiate)
	d.awaitArtifacts("Instantiated", func(v artifactsView) bool { return v.Status == lifecycle.StatusInstantiated })
	want := image + "@" + first
	if got := liveImages(t, "pinweb"); !slices.Equal(got, []string{want, want}) {
		t.Fatalf("live images %v, want %s on both clusters", got, want)
	}
	type imagesView struct {
		Images []artifact.Image `json:"images"`
	}
	if got := getAs[imagesView](t, d.c, d.dig()+"/status?status=deployed&output=summary").Images; !slices.Equal(got, []artifact.Image{{Image: image, Digest: first}}) {
		t.Errorf("status images %v", got)
	}

	second := testenv.PushImage(t, stack, "images/pinweb", "1", "second") // the tag moves
	acc := d.update("update", nil)
	recordHistory(t, acc.WorkflowID, "Update-images-pinned")
	if got, want := liveImages(t, "pinweb"), image+"@"+second; !slices.Equal(got, []string{want, want}) {
		t.Fatalf("after an update live images %v, want %s", got, want)
	}
	d.update("rollback", map[string]any{"spec": map[string]any{"revision": "1"}})
	if got := liveImages(t, "pinweb"); !slices.Equal(got, []string{want, want}) {
		t.Fatalf("after the rollback live images %v, want revision 1's %s", got, want)
	}

	d.c.multipart("PUT", d.ca()+"/apps/pinweb", res("pinweb", nil), imageChart("pinweb", reg+"/images/missing:1")).must(t, 200)
	d.operate(lifecycle.OpUpdate)
	v := d.awaitArtifacts("UpdateFailed", func(v artifactsView) bool { return v.Status == lifecycle.StatusUpdateFailed })
	if !strings.Contains(v.Error, "images/missing:1") || !strings.Contains(v.Error, "not found") {
		t.Errorf("error %q, want it to name the missing image", v.Error)
	}
	if got := liveImages(t, "pinweb"); !slices.Equal(got, []string{want, want}) {
		t.Errorf("after the failed update live images %v, want them untouched", got)
	}
}

// A staged rollout deploys in its later stage the bits its first stage got, though the
// tag moved while it waited for an approval.
func TestARolloutsLaterStageGetsTheRevisionsBitsAfterTheTagMoved(t *testing.T) {
	reg := stack.Registry.Address()
	first := testenv.PushChart(t, stack, bitsChart("ringref", "2.0.0", "ring-A"), "charts/ringref", "2.0.0")
	d := newDeployment(t, app{name: "ringref", placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"}, map[string]any{"clusterProvider": provider, "cluster": "cluster2"}}},
		source: map[string]any{"oci": "oci://" + reg + "/charts/ringref", "version": "2.0.0", "plainHTTP": true}})
	d.beforeApps = func(d *deployment) {
		d.c.do("POST", "/projects/"+d.project+"/artifact-credentials", res("registry", map[string]any{
			"host": reg, "username": stack.Registry.User, "password": stack.Registry.Password})).must(t, 201)
	}
	d.create()
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "first", "clusters": []string{"cluster1"}},
		map[string]any{"name": "second", "clusters": []string{"cluster2"}, "before": []any{map[string]any{"type": "approval"}}},
	}})
	d.operate(lifecycle.OpInstantiate)
	d.awaitRollout("second waiting for its approval", 2*time.Minute, func(v rolloutView) bool {
		return v.stage("second").State == lifecycle.StageWaitingForApproval
	})
	if got := []string{bits(t, 0, "ringref"), bits(t, 1, "ringref")}; !slices.Equal(got, []string{"ring-A", ""}) {
		t.Fatalf("before the approval: %q, want ring-A on cluster1 only", got)
	}
	if moved := testenv.PushChart(t, stack, bitsChart("ringref", "2.0.0", "ring-B"), "charts/ringref", "2.0.0"); moved == first {
		t.Fatal("the tag did not move")
	}
	d.c.do("POST", d.dig()+"/rollout/approve", map[string]any{"stage": "second"}).must(t, 200)
	v := d.awaitArtifacts("Instantiated", func(v artifactsView) bool { return v.Status == lifecycle.StatusInstantiated })
	if got := bits(t, 1, "ringref"); got != "ring-A" {
		t.Errorf("the second stage's cluster got %q, want ring-A: the bits the revision was approved with", got)
	}
	if a := v.of("ringref"); a.Digest != first {
		t.Errorf("the revision pinned %s, want %s", a.Digest, first)
	}
}
