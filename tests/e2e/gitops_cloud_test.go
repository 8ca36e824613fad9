package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

var gvrKustomization = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

// appliedByFlux checks that an object on the GitOps cluster is there (want) or gone, and
// was applied by Flux Kustomization ns/kust.
func appliedByFlux(t *testing.T, gvr schema.GroupVersionResource, namespace, name, kustNS, kust string, want bool) func() error {
	return func() error {
		u, err := dynClient(t, stack.GitOps.Cluster).Resource(gvr).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case !want && apierrors.IsNotFound(err):
			return nil
		case !want && err == nil:
			return fmt.Errorf("%s %s/%s is still there", gvr.Resource, namespace, name)
		case err != nil:
			return err
		}
		if l := u.GetLabels(); l["kustomize.toolkit.fluxcd.io/name"] != kust || l["kustomize.toolkit.fluxcd.io/namespace"] != kustNS {
			return fmt.Errorf("%s %s/%s was not applied by Kustomization %s/%s: labels %v", gvr.Resource, namespace, name, kustNS, kust, l)
		}
		return nil
	}
}

// A standard logical cloud (privileged: one permission is cluster-wide) over a cluster
// reached with its kubeconfig and the GitOps cluster, as EMCO sets one up: on the GitOps
// cluster its namespace, quota, Role, RoleBinding, ClusterRole and ClusterRoleBinding and,
// instead of a certificate, its ServiceAccount <cloud>-sa, bound to its roles (with their
// rights and no others), all committed to git and applied by Flux, its namespace with its
// Kustomization by the bootstrap Kustomization (which applies the cloud's DIGs'
// Kustomizations, in that namespace, too: a DIG instantiated at once does not block Flux).
// A DIG in the cloud lands in the cloud's
// namespace on both clusters, on the GitOps one applied by a Kustomization in that
// namespace impersonating the ServiceAccount; objects outside the cloud's rights (a
// ClusterRole, a ConfigMap in another namespace) fail as Forbidden on cluster1, and on the
// GitOps cluster (committed, so Applied, as EMCO says) Flux refuses them as Forbidden,
// which their readiness says. Terminating the DIGs, then the cloud, removes everything
// from both clusters and from git.
func TestStandardLogicalCloudOnGitOps(t *testing.T) {
	gc := registerGitOps(t)
	ctx := context.Background()
	d := newDeployment(t, app{name: "tweb", chart: webChart("tweb"), placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": gc}}}})
	d.logicalCloud = "tenant"
	lc, cloudInst := "", ""
	d.setUpCloud = func(d *deployment) {
		lc = standardCloud(d, "tenant", "cluster1", gc)
		grantWorkloads(d, lc, "tenant-ns")
		// A cluster-wide permission too: a privileged cloud.
		d.c.do("POST", lc+"/user-permissions", res("nodes", map[string]any{"namespace": "", "apiGroups": []string{""},
			"resources": []string{"nodes"}, "verbs": []string{"get", "list"}})).must(t, 201)
		d.c.do("POST", lc+"/cluster-quotas", res("q", map[string]any{"pods": "20"})).must(t, 201)
		var acc lifecycle.OpAccepted
		d.c.do("POST", lc+"/instantiate", nil).must(t, 202).json(t, &acc)
		cloudInst = acc.ContextID
		d.awaitCloud("tenant", lifecycle.StatusInstantiated)
	}
	d.create()
	// The DIG at once, as EMCO's scripts go on once the cloud is Instantiated (committed):
	// its Kustomization, in the cloud's namespace, may reach the cluster before Flux has
	// applied the cloud. Flux applying both is their readiness.
	inst := d.operate(lifecycle.OpInstantiate).ContextID
	d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	awaitValue(t, "the cloud Ready on both clusters", 2*time.Minute,
		func() status { return getAs[status](t, d.c, lc+"/status?output=summary") },
		func(s status) bool { return s.ReadyStatus == "Ready" })
	d.await("Ready", 2*time.Minute, "?status=ready&output=summary", func(s status) bool { return s.ReadyStatus == "Ready" })

	// The cloud on the GitOps cluster, read with that cluster's own kubeconfig.
	gcs, err := stack.GitOps.Cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	cloudKust := "kust" + cloudInst
	ns, err := gcs.CoreV1().Namespaces().Get(ctx, "tenant-ns", metav1.GetOptions{})
	if err != nil || ns.Labels["kustomize.toolkit.fluxcd.io/name"] != "flux-system" {
		t.Errorf("the cloud's namespace on the GitOps cluster, applied by Flux's bootstrap Kustomization: %v %v", ns.GetLabels(), err)
	}
	if _, err := gcs.CoreV1().ServiceAccounts("tenant-ns").Get(ctx, "tenant-sa", metav1.GetOptions{}); err != nil {
		t.Errorf("the cloud's ServiceAccount: %v", err)
	}
	if q, err := gcs.CoreV1().ResourceQuotas("tenant-ns").Get(ctx, "q", metav1.GetOptions{}); err != nil || q.Spec.Hard.Pods().String() != "20" {
		t.Errorf("the cloud's quota: %v %v", q, err)
	}
	if _, err := gcs.RbacV1().Roles("tenant-ns").Get(ctx, "tenant-rw", metav1.GetOptions{}); err != nil {
		t.Errorf("the cloud's Role: %v", err)
	}
	rb, err := gcs.RbacV1().RoleBindings("tenant-ns").Get(ctx, "tenant-rw", metav1.GetOptions{})
	if err != nil || !slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool {
		return s.Kind == "ServiceAccount" && s.Name == "tenant-sa" && s.Namespace == "tenant-ns"
	}) {
		t.Errorf("the cloud's RoleBinding does not bind its ServiceAccount: %v %v", rb, err)
	}
	crb, err := gcs.RbacV1().ClusterRoleBindings().Get(ctx, "tenant-nodes", metav1.GetOptions{})
	if err != nil || !slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == "tenant-sa" }) {
		t.Errorf("the cloud's ClusterRoleBinding does not bind its ServiceAccount: %v %v", crb, err)
	}
	// The ServiceAccount has the cloud's rights, and only those.
	for _, c := range []struct {
		ns, verb, group, resource string
		allowed                   bool
	}{
		{"tenant-ns", "create", "apps", "deployments", true},
		{"tenant-ns", "patch", "", "configmaps", true},
		{"", "list", "", "nodes", true},
		{"tenant-ns", "create", "", "secrets", false},
		{"default", "create", "", "configmaps", false},
		{"", "create", "rbac.authorization.k8s.io", "clusterroles", false},
	} {
		r, err := gcs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:tenant-ns:tenant-sa", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:tenant-ns", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Verb: c.verb, Group: c.group, Resource: c.resource}}}, metav1.CreateOptions{})
		if err != nil || r.Status.Allowed != c.allowed {
			t.Errorf("may tenant-sa %s %s in %q? %v (%v), want %v", c.verb, c.resource, c.ns, r.Status.Allowed, err, c.allowed)
		}
	}
	if _, err := gcs.CertificatesV1().CertificateSigningRequests().Get(ctx, "temco-"+d.project+"-tenant", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a CSR on the GitOps cluster: %v", err)
	}
	// The credentials: a kubeconfig on cluster1, the ServiceAccount's name on the GitOps cluster.
	if kc, err := issuedKubeconfig(t, d.project, "tenant", "cluster1"); err != nil {
		t.Errorf("no credential on cluster1: %v", err)
	} else if _, err := clientcmd.Load(kc); err != nil {
		t.Errorf("the credential on cluster1 is no kubeconfig: %v", err)
	}
	if cred, err := issuedKubeconfig(t, d.project, "tenant", gc); err != nil || string(cred) != `{"kind":"ServiceAccount","namespace":"tenant-ns","name":"tenant-sa"}` {
		t.Errorf("the credential on the GitOps cluster: %s %v", cred, err)
	}
	cloudDir := stack.GitOps.Path() + "/context/" + cloudInst
	if out, err := stack.Git.Git(ctx, stack.GitOps.Repo, "show", stack.GitOps.Branch+":"+stack.GitOps.Path()+"/"+cloudKust+".yaml"); err != nil ||
		!strings.Contains(out, "kind: Namespace") || !strings.Contains(out, "name: tenant-ns") {
		t.Errorf("the cloud's Kustomization file does not hold its namespace: %v\n%s", err, out)
	}
	if files := gitFiles(t, cloudDir); !slices.Contains(files, cloudDir+"/app/logical-cloud/tenant-sa+ServiceAccount.yaml") ||
		!slices.Contains(files, cloudDir+"/app/logical-cloud/tenant-rw+RoleBinding.yaml") {
		t.Errorf("the cloud's files in git: %v", files)
	}
	if log := gitLog(t, cloudDir); len(log) != 1 || !strings.Contains(log[0], "instantiate of logical cloud /projects/"+d.project+"/logical-clouds/tenant") {
		t.Errorf("commits of the cloud's instantiate: %q", log)
	}

	// The DIG in the cloud: in its namespace on both clusters; on the GitOps one applied by
	// a Kustomization in that namespace, impersonating the cloud's ServiceAccount.
	kust := "kust" + inst
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{gvrDeployment, "tweb"}, {gvrConfigMap, "tweb-config"}, {gvrService, "tweb"}} {
		if err := appliedByFlux(t, o.gvr, "tenant-ns", o.name, "tenant-ns", kust, true)(); err != nil {
			t.Errorf("the DIG on the GitOps cluster: %v", err)
		}
	}
	if err := presentOnGitOps(t, gvrDeployment, "tweb", false)(); err != nil {
		t.Errorf("the DIG's Deployment in default: %v", err)
	}
	k, err := dynClient(t, stack.GitOps.Cluster).Resource(gvrKustomization).Namespace("tenant-ns").Get(ctx, kust, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the DIG's Kustomization: %v", err)
	}
	if sa, _, _ := unstructured.NestedString(k.Object, "spec", "serviceAccountName"); sa != "tenant-sa" {
		t.Errorf("the DIG's Kustomization impersonates %q, want tenant-sa", sa)
	}
	if src, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "namespace"); src != "flux-system" {
		t.Errorf("the DIG's Kustomization reads its source from namespace %q", src)
	}
	cs1, _ := stack.Clusters[0].Clientset()
	if dep, err := cs1.AppsV1().Deployments("tenant-ns").Get(ctx, "tweb", metav1.GetOptions{}); err != nil || dep.Labels[lifecycle.DeploymentIDLabel] != inst+"-tweb" {
		t.Errorf("the DIG on cluster1: %v %v", dep, err)
	}

	// Outside the cloud's rights: a ClusterRole and a ConfigMap in another namespace,
	// refused on cluster1 for the cloud's user (Failed at once, with the reason) and on
	// the GitOps cluster for its ServiceAccount, which Flux impersonates (committed, so
	// Applied; its readiness says Flux refused it, with the reason).
	ca2 := "/projects/" + d.project + "/composite-apps/outside/v1"
	dig2 := ca2 + "/deployment-intent-groups/dig"
	grant := testenv.Chart("grant", "", map[string]string{"all.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: tenant-grant
rules: [{apiGroups: [""], resources: [nodes], verbs: [list]}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: grant-elsewhere
  namespace: default
data: {a: b}
`})
	c := d.c
	c.do("POST", "/projects/"+d.project+"/composite-apps", res("outside", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	c.multipart("POST", ca2+"/apps", res("grant", nil), grant).must(t, 201)
	c.do("POST", ca2+"/composite-profiles", res("prof", nil)).must(t, 201)
	c.multipart("POST", ca2+"/composite-profiles/prof/profiles", res("grant-profile", map[string]any{"app": "grant"}), testenv.Profile("a: b\n")).must(t, 201)
	c.do("POST", ca2+"/deployment-intent-groups", res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "tenant"})).must(t, 201)
	c.do("POST", dig2+"/generic-placement-intents", res("gpi", nil)).must(t, 201)
	c.do("POST", dig2+"/generic-placement-intents/gpi/app-intents", res("grant", map[string]any{"app": "grant", "intent": map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": gc}}}})).must(t, 201)
	c.do("POST", dig2+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})).must(t, 201)
	c.do("POST", dig2+"/approve", nil).must(t, 202)
	var acc2 lifecycle.OpAccepted
	c.do("POST", dig2+"/instantiate", nil).must(t, 202).json(t, &acc2)
	digStatus := func() status {
		var s status
		c.do("GET", dig2+"/status", nil).must(t, 200).json(t, &s)
		return s
	}
	s := awaitValue(t, "objects outside the cloud's rights InstantiateFailed", 3*time.Minute, digStatus,
		func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	byCluster := func(s status) map[string]string {
		out := map[string]string{}
		for _, a := range s.Apps {
			for _, cl := range a.Clusters {
				for _, r := range cl.Resources {
					out[strings.TrimPrefix(cl.Cluster, provider+"+")+" "+r.GVK.Kind] = r.RsyncStatus + ": " + r.Error
				}
			}
		}
		return out
	}
	deployed := byCluster(s)
	for _, kind := range []string{"ClusterRole", "ConfigMap"} {
		if e := deployed["cluster1 "+kind]; !strings.HasPrefix(e, lifecycle.ResFailed+": ") || !strings.Contains(e, "forbidden") || !strings.Contains(e, `User "tenant-user"`) {
			t.Errorf("cluster1: %s %q, want Failed, the cloud's user forbidden", kind, e)
		}
		if e := deployed[gc+" "+kind]; e != lifecycle.ResApplied+": " {
			t.Errorf("GitOps cluster: %s %q, want Applied (committed)", kind, e)
		}
	}
	refused := func(s status) bool {
		for _, kind := range []string{"ClusterRole", "ConfigMap"} {
			if e := byCluster(s)[gc+" "+kind]; !strings.Contains(e, "Flux refused what git holds for this deployment") ||
				!strings.Contains(e, "(Forbidden)") || !strings.Contains(e, `User "system:serviceaccount:tenant-ns:tenant-sa"`) {
				return false
			}
		}
		return true
	}
	awaitValue(t, "Flux's refusal for the cloud's ServiceAccount in the readiness", 2*time.Minute,
		func() status { return getAs[status](t, c, dig2+"/status?status=ready") }, refused)
	if _, err := gcs.RbacV1().ClusterRoles().Get(ctx, "tenant-grant", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole on the GitOps cluster: %v", err)
	}
	if _, err := gcs.CoreV1().ConfigMaps("default").Get(ctx, "grant-elsewhere", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap in default on the GitOps cluster: %v", err)
	}
	if _, err := cs1.RbacV1().ClusterRoles().Get(ctx, "tenant-grant", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole on cluster1: %v", err)
	}

	// Terminate both DIGs, then the cloud: nothing left on either cluster or in git.
	// (On cluster1 the refused DIG's terminate tries to delete its Failed objects with the
	// cloud's certificate, which is forbidden too: TerminateFailed, though nothing exists.
	// On the GitOps cluster its Kustomization goes and its objects are Deleted.) The
	// cloud's terminate follows at once, as a script's would: it waits for Flux to remove
	// the DIGs' Kustomizations, which need the cloud's ServiceAccount to.
	c.do("POST", dig2+"/terminate", nil).must(t, 202)
	d.operate(lifecycle.OpTerminate)
	s = awaitValue(t, "the refused DIG Terminated", 3*time.Minute, digStatus,
		func(s status) bool {
			return s.Status == lifecycle.StatusTerminated || s.Status == lifecycle.StatusTerminateFailed
		})
	for _, a := range s.Apps {
		for _, cl := range a.Clusters {
			for _, r := range cl.Resources {
				onCluster1 := strings.TrimPrefix(cl.Cluster, provider+"+") == "cluster1"
				if r.RsyncStatus != lifecycle.ResDeleted && !(onCluster1 && r.RsyncStatus == lifecycle.ResFailed && strings.Contains(r.Error, "forbidden")) {
					t.Errorf("the refused DIG's terminate: %s %s/%s %s %s", cl.Cluster, r.GVK.Kind, r.Name, r.RsyncStatus, r.Error)
				}
			}
		}
	}
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	c.do("POST", lc+"/terminate", nil).must(t, 202)
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{gvrDeployment, "tweb"}, {gvrConfigMap, "tweb-config"}, {gvrService, "tweb"}} {
		eventually(t, "the DIG's "+o.name+" removed by Flux", time.Minute, appliedByFlux(t, o.gvr, "tenant-ns", o.name, "tenant-ns", kust, false))
	}
	eventually(t, "the DIG's Kustomization removed", time.Minute, func() error {
		_, err := dynClient(t, stack.GitOps.Cluster).Resource(gvrKustomization).Namespace("tenant-ns").Get(ctx, kust, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("Kustomization tenant-ns/%s: %v", kust, err)
	})
	for _, i := range []string{inst, acc2.ContextID} {
		if files := gitFiles(t, stack.GitOps.Path()+"/context/"+i); len(files) != 0 {
			t.Errorf("files of DIG instance %s left in git: %v", i, files)
		}
		if files := gitFiles(t, stack.GitOps.Path()+"/kust"+i+".yaml"); len(files) != 0 {
			t.Errorf("Kustomization of DIG instance %s left in git", i)
		}
	}

	d.awaitCloud("tenant", lifecycle.StatusTerminated)
	eventually(t, "the cloud's namespace gone from the GitOps cluster", 2*time.Minute, func() error {
		if _, err := gcs.CoreV1().Namespaces().Get(ctx, "tenant-ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace tenant-ns: %v", err)
		}
		return nil
	})
	eventually(t, "the cloud's namespace gone from cluster1", 2*time.Minute, func() error {
		if _, err := cs1.CoreV1().Namespaces().Get(ctx, "tenant-ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace tenant-ns: %v", err)
		}
		return nil
	})
	for _, name := range []string{"tenant-nodes"} {
		if _, err := gcs.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the cloud's ClusterRoleBinding after terminate: %v", err)
		}
		if _, err := gcs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the cloud's ClusterRole after terminate: %v", err)
		}
	}
	if files := gitFiles(t, cloudDir); len(files) != 0 {
		t.Errorf("the cloud's files left in git: %v", files)
	}
	if files := gitFiles(t, stack.GitOps.Path()+"/"+cloudKust+".yaml"); len(files) != 0 {
		t.Errorf("the cloud's Kustomization left in git")
	}
	if log := gitLog(t, cloudDir); len(log) != 2 || !strings.Contains(log[0], "terminate of logical cloud") {
		t.Errorf("commits of the cloud: %q", log)
	}
	for _, cl := range []string{"cluster1", gc} {
		if _, err := issuedKubeconfig(t, d.project, "tenant", cl); err == nil {
			t.Errorf("%s: the cloud's credential outlived terminate", cl)
		}
	}
}
