package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

var gvrGitRepository = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}

// holdFlux suspends (hold) or resumes the GitOps cluster's bootstrap source: while it is
// suspended Flux fetches no new commit, as a cluster that has not reconciled yet. The test
// resumes it when it ends.
func holdFlux(t *testing.T, hold bool) {
	t.Helper()
	set := func(hold bool) error {
		_, err := dynClient(t, stack.GitOps.Cluster).Resource(gvrGitRepository).Namespace("flux-system").Patch(context.Background(),
			"flux-system", types.MergePatchType, fmt.Appendf(nil, `{"spec":{"suspend":%v}}`, hold), metav1.PatchOptions{})
		return err
	}
	if err := set(hold); err != nil {
		t.Fatalf("suspend Flux's source: %v", err)
	}
	if hold {
		t.Cleanup(func() { _ = set(false) })
	}
}

// readyOf lists the readiness of every object on cluster (its name) with its error.
func readyOf(d *deployment, cluster string) []string {
	var out []string
	for _, r := range resources(d.status("?status=ready")) {
		if strings.HasPrefix(r, cluster+" ") {
			out = append(out, r)
		}
	}
	return out
}

// allSay tells whether every line of lines holds text (and there is one).
func allSay(lines []string, text string) bool {
	return len(lines) > 0 && !slices.ContainsFunc(lines, func(l string) bool { return !strings.Contains(l, text) })
}

// As in EMCO, a GitOps cluster's objects are Applied once committed, so the operation on
// a cluster whose Flux has not reconciled yet moves on; what temco knows of the reconcile
// is the cluster's readiness, and a staged rollout's health gate waits for it before it
// promotes: the GitOps stage is Verifying (its objects Applied, its readiness saying Flux
// has not applied them) and the next stage untouched until Flux applies the commit. For
// an update the gate waits for what was committed now, not the previous revision Flux
// still shows Ready.
func TestGitOpsRolloutWaitsForFluxBeforePromoting(t *testing.T) {
	gc := registerGitOps(t)
	d := newDeployment(t, app{name: "gring", chart: webChart("gring"), placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": gc}}}})
	d.logicalCloud, d.setUpCloud = "gitops", onClusters("cluster1", gc)
	d.create()
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "gitops", "clusters": []string{gc}, "progressDeadline": "5m"},
		map[string]any{"name": "rest"},
	}})
	gating := func(what string) {
		t.Helper()
		d.awaitRollout("the GitOps stage gating "+what, 2*time.Minute, func(v rolloutView) bool {
			s := v.stage("gitops")
			return s.State == lifecycle.StageVerifying && s.NotReady == 1
		})
		if v := d.rollout(); v.stage("rest").State != lifecycle.StagePending {
			t.Fatalf("%s: the next stage moved before Flux applied the GitOps one: %s", what, pretty(v.Rollout))
		}
	}

	holdFlux(t, true)
	inst := d.operate(lifecycle.OpInstantiate).ContextID
	gating("the instantiate")
	s := d.status("")
	for _, r := range resources(s) {
		if cl, _, _ := strings.Cut(r, " "); cl == gc && !strings.Contains(r, " "+lifecycle.ResApplied+": ") {
			t.Errorf("on the GitOps cluster, committed: %s, want Applied", r)
		}
	}
	if r := readyOf(d, gc); !allSay(r, "Kustomization flux-system/kust"+inst+" does not exist yet") {
		t.Errorf("readiness before Flux reconciled:\n%s", strings.Join(r, "\n"))
	}
	if liveObject(t, 0, deployments, "gring") != nil {
		t.Error("the next stage's cluster changed before Flux applied the GitOps stage")
	}
	holdFlux(t, false)
	v := d.awaitRollout("Instantiated", 3*time.Minute, func(v rolloutView) bool { return v.Status == lifecycle.StatusInstantiated })
	if v.Rollout == nil || v.Rollout.State != lifecycle.RolloutSucceeded {
		t.Fatalf("rollout after Flux applied: %s", pretty(v.Rollout))
	}
	if err := presentOnGitOps(t, gvrDeployment, "gring", true)(); err != nil {
		t.Error(err)
	}

	// An update while Flux holds: the previous revision is Ready on the GitOps cluster, yet
	// the gate waits for the new one.
	d.c.multipart("PUT", d.ca()+"/apps/gring", res("gring", nil), testenv.Chart("gring", "replicas: 1\nmessage: updated\n",
		map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gring-config\ndata:\n  message: updated\n"})).must(t, 200)
	holdFlux(t, true)
	var acc lifecycle.OpAccepted
	poll.Until(t, "the update accepted", 30*time.Second, func(context.Context) error {
		r := d.c.do("POST", d.dig()+"/update", nil)
		if r.code != 202 {
			return fmt.Errorf("%d %s", r.code, r.body)
		}
		r.json(t, &acc)
		return nil
	})
	gating("the update")
	if r := readyOf(d, gc); !allSay(r, "Flux has not applied what git holds for this deployment yet") {
		t.Errorf("readiness of the update before Flux reconciled:\n%s", strings.Join(r, "\n"))
	}
	holdFlux(t, false)
	d.awaitRollout("the update Instantiated", 3*time.Minute, func(v rolloutView) bool {
		return v.Instance == acc.ContextID && v.Status == lifecycle.StatusInstantiated && v.Rollout != nil && v.Rollout.State == lifecycle.RolloutSucceeded
	})
	if cm := liveObject(t, 0, gvrConfigMap, "gring-config"); cm == nil || fmt.Sprint(cm["data"]) != "map[message:updated]" {
		t.Errorf("the update on cluster1: %v", cm)
	}
	eventually(t, "the Service pruned by Flux", time.Minute, presentOnGitOps(t, gvrService, "gring", false))

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	eventually(t, "Flux removed the deployment", time.Minute, presentOnGitOps(t, gvrDeployment, "gring", false))
}

// EMCO's examples/test-anthos files (its prerequisites without the controllers, a
// privileged logical cloud, a DIG of collectd in it, approve and instantiate), run as
// docs/emcoctl.md says against the stack's git server, as dcm and rsync's anthos plugin
// do it: the cloud's objects under clusters/<c>/context/<cloud's instance>/ with its
// RepoSync repo-sync-<cloud> reading namespaces/<ns>/<c>, every role bound to that
// RepoSync's reconciler; the DIG's objects under namespaces/<ns>/<c>/context/<instance>/,
// where the RepoSync reads. Deleting the files removes everything from git. (There is no
// Config Sync here: committed is deployed, and readiness says temco reads nothing back.)
func TestEMCOTestAnthosFiles(t *testing.T) {
	g := stack.GitOps
	if g == nil {
		t.Fatal("the stack has no GitOps cluster")
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("output/collectd.tar.gz", webChart("collectd"))
	write("output/collectd_profile.tar.gz", testenv.Profile("message: from-the-profile\n"))
	for name, body := range testAnthosFiles {
		write(name, []byte(body))
	}
	project := projectName(t)
	write("values.yaml", []byte(fmt.Sprintf(`PackagesPath: output
ProjectName: %s
ClusterProvider: provider-anthos
ClusterLabel: edge-cluster
CompositeApp: test-composite-app
CompositeProfile: test-composite-profile
GenericPlacementIntent: test-placement-intent
DeploymentIntent: test-deployment-intent
Intent: intent
GitObj: GitObject
GitUser: %s
GitToken: %s
GitRepo: %s
GitUrl: %s
Branch: %s
Cluster1: acm-cluster
Cluster1Ref: acm-cluster-ref
LogicalCloud: lc1
PrivilegedNamespace: privileged-lc-ns
PrivilegedPermission1: privileged-permission-primary
PrivilegedPermission2: privileged-permission-kube-system
PrivilegedPermission3: privileged-permission-cluster
Applist:
  - Name: collectd
`, project, g.User, g.Password, g.Repo, g.URL(), g.Branch)))
	run := func(cmd string, files ...string) {
		t.Helper()
		args := []string{cmd}
		for _, f := range files {
			args = append(args, "-f", f)
		}
		args = append(args, "-v", "values.yaml", "-s")
		if cmd == "apply" {
			args = append(args, "--wait")
		}
		if out, err := temco(t, dir, args...); err != nil {
			t.Fatalf("temco %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	const c = "provider-anthos+acm-cluster"
	run("apply", "01-prerequisites.yaml", "02-logicalcloud.yaml")
	cl := &client{t: t}
	lcPath := "/projects/" + project + "/logical-clouds/lc1"
	lc := getAs[status](t, cl, lcPath+"/status?status=deployed&output=summary")
	if lc.Status != lifecycle.StatusInstantiated || len(lc.States.Actions) == 0 {
		t.Fatalf("the privileged cloud on anthos: %s", pretty(lc))
	}
	lcInst := lc.States.Actions[len(lc.States.Actions)-1].ContextID
	lcDir := "clusters/" + c + "/context/" + lcInst
	files := gitFiles(t, lcDir)
	for _, f := range []string{"app/logical-cloud/privileged-lc-ns+Namespace.yaml", "app/logical-cloud/repo-sync-lc1+RepoSync.yaml",
		"app/logical-cloud/lc1-privileged-permission-cluster+ClusterRoleBinding.yaml",
		"app/logical-cloud/lc1-privileged-permission-kube-system+RoleBinding.yaml", "deployed"} {
		if !slices.Contains(files, lcDir+"/"+f) {
			t.Errorf("the cloud's %s not in git: %v", f, files)
		}
	}
	if slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, "+ServiceAccount.yaml") }) {
		t.Errorf("a ServiceAccount of the cloud's on anthos (Config Sync makes its reconciler's): %v", files)
	}
	show := func(path string) string {
		t.Helper()
		out, err := stack.Git.Git(context.Background(), g.Repo, "show", g.Branch+":"+path)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if rs := show(lcDir + "/app/logical-cloud/repo-sync-lc1+RepoSync.yaml"); !strings.Contains(rs, "dir: /namespaces/privileged-lc-ns/"+c) ||
		!strings.Contains(rs, "repo: "+g.URL()) || !strings.Contains(rs, "namespace: privileged-lc-ns") || strings.Contains(rs, g.Password) {
		t.Errorf("the cloud's RepoSync:\n%s", rs)
	}
	if b := show(lcDir + "/app/logical-cloud/lc1-privileged-permission-cluster+ClusterRoleBinding.yaml"); !strings.Contains(b, "name: ns-reconciler-privileged-lc-ns-repo-sync-lc1-13") ||
		!strings.Contains(b, "namespace: config-management-system") {
		t.Errorf("the cloud's ClusterRoleBinding does not bind its RepoSync's reconciler:\n%s", b)
	}

	run("apply", "03-deployment-intent.yaml", "04-instantiation.yaml")
	dig := "/projects/" + project + "/composite-apps/test-composite-app/v1/deployment-intent-groups/test-deployment-intent"
	s := getAs[status](t, cl, dig+"/status")
	if s.Status != lifecycle.StatusInstantiated {
		t.Fatalf("the DIG: %s", pretty(s))
	}
	digDir := "namespaces/privileged-lc-ns/" + c + "/context/" + s.Instance
	want := []string{digDir + "/app/collectd/collectd+Deployment.yaml", digDir + "/app/collectd/collectd+Service.yaml",
		digDir + "/app/collectd/collectd-config+ConfigMap.yaml", digDir + "/deployed"}
	if files := gitFiles(t, digDir); !slices.Equal(files, want) {
		t.Errorf("the DIG's files:\n got %v\nwant %v", files, want)
	}
	if files := gitFiles(t, "clusters/"+c+"/context/"+s.Instance); len(files) != 0 {
		t.Errorf("the DIG's files under clusters/, where the root reconciler would apply them: %v", files)
	}
	if cm := show(digDir + "/app/collectd/collectd-config+ConfigMap.yaml"); !strings.Contains(cm, "namespace: privileged-lc-ns") {
		t.Errorf("the DIG's ConfigMap:\n%s", cm)
	}
	if r := getAs[status](t, cl, dig+"/status?status=ready"); !anyResource(r, "", "temco reads no status back from anthos clusters") {
		t.Errorf("readiness on anthos:\n%s", strings.Join(resources(r), "\n"))
	}

	run("delete", "01-prerequisites.yaml", "02-logicalcloud.yaml", "03-deployment-intent.yaml", "04-instantiation.yaml")
	for _, path := range []string{digDir, lcDir} {
		if files := gitFiles(t, path); len(files) != 0 {
			t.Errorf("files left in git after delete: %v", files)
		}
	}
	cl.do("GET", "/projects/"+project, nil).must(t, 404)
}

// testAnthosFiles are EMCO's examples/test-anthos files as EMCO ships them, without
// 00-controllers.yaml (it registers controllers temco builds in, by host and port).
var testAnthosFiles = map[string]string{
	"01-prerequisites.yaml": `# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2022 Intel Corporation

---
#creating cluster provider
version: emco/v2
resourceContext:
  anchor: cluster-providers
metadata:
   name: {{ .ClusterProvider }}

---
#creating cluster provider kv pair
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ $.ClusterProvider }}/cluster-sync-objects
metadata:
  name: {{ $.GitObj}}
spec:
  kv:
  #- gitType: github  # Uncomment to use Github REST APIs
  - userName: {{ $.GitUser }}
  - gitToken:  {{ $.GitToken }}
  - repoName: {{ $.GitRepo }}
  - branch: {{ $.Branch }}
  - url: {{ $.GitUrl }}

---
#creating cluster
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ $.ClusterProvider }}/clusters
metadata:
   name: {{ $.Cluster1 }}
spec:
  gitOps:
    gitOpsType: anthos
    gitOpsReferenceObject: {{ $.GitObj }}
    gitOpsResourceObject: {{ $.GitObj }}
file:
  values.yaml

---
#Add label cluster
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ $.ClusterProvider }}/clusters/{{ $.Cluster1 }}/labels
clusterLabel: {{ $.ClusterLabel }}

---
#create project
version: emco/v2
resourceContext:
  anchor: projects
metadata:
   name: {{ .ProjectName }}
`,
	"02-logicalcloud.yaml": `---
#create privileged logical cloud
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds
metadata:
  name: {{.LogicalCloud}}
spec:
  namespace: {{.PrivilegedNamespace}}
  user:
    userName: user-1
    type: certificate

---
#add primary user permission
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.LogicalCloud}}/user-permissions
metadata:
    name: {{.PrivilegedPermission1}}
spec:
    namespace: {{.PrivilegedNamespace}}
    apiGroups:
    - "*"
    resources:
    - "*"
    verbs:
    - "*"

---
#add kube-system namespace user permission
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.LogicalCloud}}/user-permissions
metadata:
    name: {{.PrivilegedPermission2}}
spec:
    namespace: "kube-system"
    apiGroups:
    - "*"
    resources:
    - "*"
    verbs:
    - "*"

---
#add cluster-wide user permission
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.LogicalCloud}}/user-permissions
metadata:
    name: {{.PrivilegedPermission3}}
spec:
    namespace: ""
    apiGroups:
    - "*"
    resources:
    - "*"
    verbs:
    - "*"

---
#add cluster reference to logical cloud
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.LogicalCloud}}/cluster-references
metadata:
  name: {{.Cluster1Ref}}
spec:
  clusterProvider: {{.ClusterProvider}}
  cluster: {{.Cluster1}}
  loadbalancerIp: "0.0.0.0"

---
#instantiate logical cloud
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/logical-clouds/{{ .LogicalCloud }}/instantiate
`,
	"03-deployment-intent.yaml": `# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2022 Intel Corporation

---
#creating composite app entry
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/composite-apps
metadata :
  name: {{ .CompositeApp }}
spec:
  compositeAppVersion: v1

{{- range $index, $app := .Applist }}
---
#adding app to the composite app
version: emco/v2
resourceContext:
  anchor: projects/{{ $.ProjectName }}/composite-apps/{{ $.CompositeApp }}/v1/apps
metadata :
  name: {{ $app.Name }}
file:
  {{ $.PackagesPath }}/{{ $app.Name }}.tar.gz
{{- end }}

---
#creating composite profile entry
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/composite-apps/{{ .CompositeApp }}/v1/composite-profiles
metadata :
  name: {{ .CompositeProfile }}

{{- range $index, $app := .Applist }}
---
#adding app profiles to the composite profile
version: emco/v2
resourceContext:
  anchor: projects/{{ $.ProjectName }}/composite-apps/{{ $.CompositeApp }}/v1/composite-profiles/{{ $.CompositeProfile }}/profiles
metadata :
  name: {{ $app.Name }}-profile
spec:
  app: {{ $app.Name }}
file:
  {{ $.PackagesPath }}/{{ $app.Name }}_profile.tar.gz
{{- end }}

---
#create deployment intent group
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/composite-apps/{{ .CompositeApp }}/v1/deployment-intent-groups
metadata :
  name: {{ .DeploymentIntent }}
  description: "description"
spec:
  compositeProfile: {{ .CompositeProfile }}
  version: r1
  logicalCloud: {{ .LogicalCloud }}
  overrideValues: []

---
#create intent in deployment intent group
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/composite-apps/{{ .CompositeApp }}/v1/deployment-intent-groups/{{ .DeploymentIntent }}/intents
metadata :
  name: {{ .Intent }}
spec:
  intent:
    genericPlacementIntent: {{ .GenericPlacementIntent }}

---
#create the generic placement intent
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/composite-apps/{{ .CompositeApp }}/v1/deployment-intent-groups/{{ .DeploymentIntent }}/generic-placement-intents
metadata :
  name: {{ .GenericPlacementIntent }}
spec:
  logicalCloud: {{ .LogicalCloud }}

{{- range $index, $app := .Applist }}
---
#add the app placement intent to the generic placement intent
version: emco/v2
resourceContext:
  anchor: projects/{{ $.ProjectName }}/composite-apps/{{ $.CompositeApp }}/v1/deployment-intent-groups/{{ $.DeploymentIntent }}/generic-placement-intents/{{ $.GenericPlacementIntent }}/app-intents
metadata:
  name: {{ $app.Name }}-placement-intent
spec:
  app: {{ $app.Name }}
  intent:
    allOf:
      - clusterProvider: {{ $.ClusterProvider }}
        cluster: {{ $.Cluster1 }}
{{- end }}
`,
	"04-instantiation.yaml": `# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2022 Intel Corporation

---
#Approve
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/composite-apps/{{ .CompositeApp }}/v1/deployment-intent-groups/{{ .DeploymentIntent }}/approve

---
#Instantiate
version: emco/v2
resourceContext:
  anchor: projects/{{ .ProjectName }}/composite-apps/{{ .CompositeApp }}/v1/deployment-intent-groups/{{ .DeploymentIntent }}/instantiate
`,
}
