package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// issuedKubeconfig reads the credential temco issued to a logical cloud on a cluster.
func issuedKubeconfig(t *testing.T, project, cloud, cluster string) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	st, client, err := store.Open(ctx, stack.Mongo.URI(), "temco")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	keys, err := seal.LoadKeyFile(stack.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := credentials.New(ctx, st.Database(), keys)
	if err != nil {
		t.Fatal(err)
	}
	kc, _, err := creds.Get(ctx, lifecycle.LogicalCloudID(project, cloud), provider+"+"+cluster)
	return kc, err
}

func clientsetFrom(t *testing.T, kubeconfig []byte) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func cloudPath(d *deployment, name string) string {
	return "/projects/" + d.project + "/logical-clouds/" + name
}

// standardCloud creates (not instantiates) a level 1 cloud named name, with namespace
// <name>-ns and user <name>-user, over clusters.
func standardCloud(d *deployment, name string, clusters ...string) string {
	d.t.Helper()
	lc := cloudPath(d, name)
	d.c.do("POST", "/projects/"+d.project+"/logical-clouds", res(name, map[string]any{"namespace": name + "-ns", "level": "1",
		"user": map[string]any{"userName": name + "-user", "type": "certificate"}})).must(d.t, 201)
	for _, cl := range clusters {
		d.c.do("POST", lc+"/cluster-references", res(cl, map[string]any{"clusterProvider": provider, "cluster": cl})).must(d.t, 201)
	}
	return lc
}

// grantWorkloads gives the user of cloud lc the right to manage the test charts' objects in ns.
func grantWorkloads(d *deployment, lc, ns string) {
	d.t.Helper()
	d.c.do("POST", lc+"/user-permissions", res("rw", map[string]any{"namespace": ns, "apiGroups": []string{"", "apps"},
		"resources": []string{"configmaps", "services", "deployments"}, "verbs": []string{"get", "list", "create", "update", "patch", "delete"}})).must(d.t, 201)
}

// A standard logical cloud over two clusters: its namespace, quota and RBAC on both; a
// credential confined to its namespace; a DIG in it lands there; the cloud cannot be
// terminated under the DIG; terminating it afterwards removes everything it created.
func TestStandardLogicalCloud(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.logicalCloud = "team"
	d.setUpCloud = func(d *deployment) {
		lc := standardCloud(d, "team", "cluster1", "cluster2")
		grantWorkloads(d, lc, "team-ns")
		d.c.do("POST", lc+"/cluster-quotas", res("q", map[string]any{"pods": "20", "services": "10"})).must(t, 201)
		d.c.do("POST", lc+"/instantiate", nil).must(t, 202)
		d.awaitCloud("team", lifecycle.StatusInstantiated)
	}
	d.create()
	ctx := context.Background()
	for _, cl := range stack.Clusters[:2] {
		cs, err := cl.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "team-ns", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: namespace: %v", cl.Name, err)
		}
		if q, err := cs.CoreV1().ResourceQuotas("team-ns").Get(ctx, "q", metav1.GetOptions{}); err != nil || q.Spec.Hard.Pods().String() != "20" {
			t.Errorf("%s: quota %v: %v", cl.Name, q, err)
		}
		if _, err := cs.RbacV1().Roles("team-ns").Get(ctx, "team-rw", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: role: %v", cl.Name, err)
		}
		if _, err := cs.RbacV1().RoleBindings("team-ns").Get(ctx, "team-rw", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: role binding: %v", cl.Name, err)
		}
		kc, err := issuedKubeconfig(t, d.project, "team", cl.Name)
		if err != nil {
			t.Fatalf("%s: no credential issued: %v", cl.Name, err)
		}
		user := clientsetFrom(t, kc)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
		if _, err := user.CoreV1().ConfigMaps("team-ns").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: the cloud's user cannot create a ConfigMap in its namespace: %v", cl.Name, err)
		}
		if _, err := user.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: creating in default answered %v, want 403", cl.Name, err)
		}
		if _, err := user.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: listing nodes answered %v, want 403", cl.Name, err)
		}
		_ = user.CoreV1().ConfigMaps("team-ns").Delete(ctx, "probe", metav1.DeleteOptions{})
	}
	if _, err := issuedKubeconfig(t, d.project, "team", "cluster3"); err == nil {
		t.Error("a credential was issued on a cluster outside the cloud")
	}

	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	cs, _ := stack.Clusters[0].Clientset()
	if dep, err := cs.AppsV1().Deployments("team-ns").Get(ctx, "web", metav1.GetOptions{}); err != nil || dep.Labels[lifecycle.DeploymentIDLabel] != acc.ContextID+"-web" {
		t.Errorf("the DIG's Deployment is not in the cloud's namespace: %v %v", dep, err)
	}
	if _, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the DIG's Deployment is in default: %v", err)
	}
	// Placement may only pick the cloud's clusters.
	dig2 := d.ca() + "/deployment-intent-groups/outside"
	d.c.do("POST", d.ca()+"/deployment-intent-groups", res("outside", map[string]any{"compositeProfile": "prof", "version": "r2", "logicalCloud": "team"})).must(t, 201)
	d.c.do("POST", dig2+"/generic-placement-intents", res("gpi", nil)).must(t, 201)
	d.c.do("POST", dig2+"/generic-placement-intents/gpi/app-intents", res("web", map[string]any{"app": "web", "intent": clusterNamed("cluster3")})).must(t, 201)
	d.c.do("POST", dig2+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})).must(t, 201)
	d.c.do("POST", dig2+"/approve", nil).must(t, 202)
	d.c.do("POST", dig2+"/instantiate", nil).must(t, 202)
	refused := awaitValue(t, "placement outside the cloud failed", time.Minute, func() status { return getAs[status](t, d.c, dig2+"/status") },
		func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	if !strings.Contains(refused.Error, `cluster "local+cluster3", which is not in logical cloud "team"`) {
		t.Errorf("placement outside the cloud failed with %q", refused.Error)
	}
	if refused.state() != lifecycle.StateApproved { // refused before anything was applied, as in EMCO
		t.Errorf("after the refused instantiate the DIG is %s, want Approved", refused.state())
	}

	r := d.c.do("POST", cloudPath(d, "team")+"/terminate", nil).must(t, 409)
	if !strings.Contains(string(r.body), "terminate it first") {
		t.Errorf("refusal: %s", r.body)
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	d.c.do("POST", cloudPath(d, "team")+"/terminate", nil).must(t, 202)
	d.awaitCloud("team", lifecycle.StatusTerminated)
	for _, cl := range stack.Clusters[:2] {
		cs, _ := cl.Clientset()
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "team-ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: namespace after terminate: %v", cl.Name, err)
		}
		if _, err := cs.RbacV1().Roles("team-ns").Get(ctx, "team-rw", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: role after terminate: %v", cl.Name, err)
		}
		if _, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "temco-"+d.project+"-team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: CSR after terminate: %v", cl.Name, err)
		}
		if _, err := issuedKubeconfig(t, d.project, "team", cl.Name); err == nil {
			t.Errorf("%s: the credential outlived terminate", cl.Name)
		}
	}
	recordHistory(t, d.ref().WorkflowID(), "DIGLifecycle-in-standard-cloud")
	cloud := lifecycle.Target{Project: d.project, LogicalCloud: "team"}
	var s status
	d.c.do("GET", cloudPath(d, "team")+"/status?status=deployed&output=summary", nil).must(t, 200).json(t, &s)
	first := ""
	for _, a := range s.States.Actions {
		if a.ContextID != "" && first == "" {
			first = a.ContextID
		}
	}
	recordHistory(t, cloud.OpWorkflowID(lifecycle.OpInstantiate, first), "Instantiate-standard-cloud")
	recordHistory(t, cloud.OpWorkflowID(lifecycle.OpTerminate, first), "Terminate-standard-cloud")
	recordHistory(t, cloud.WorkflowID(), "DIGLifecycle-standard-cloud")
}

// A privileged cloud may be granted cluster-wide rights: ClusterRole and ClusterRoleBinding.
func TestPrivilegedLogicalCloud(t *testing.T) {
	d := newDeployment(t)
	d.c.do("POST", "/projects", res(d.project, nil)).must(t, 201)
	lc := standardCloud(d, "ops", "cluster3")
	d.c.do("POST", lc+"/user-permissions", res("nodes", map[string]any{"namespace": "", "apiGroups": []string{""},
		"resources": []string{"nodes"}, "verbs": []string{"get", "list"}})).must(t, 201)
	d.c.do("POST", lc+"/instantiate", nil).must(t, 202)
	d.awaitCloud("ops", lifecycle.StatusInstantiated)
	kc, err := issuedKubeconfig(t, d.project, "ops", "cluster3")
	if err != nil {
		t.Fatal(err)
	}
	user := clientsetFrom(t, kc)
	ctx := context.Background()
	if nodes, err := user.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil || len(nodes.Items) != 1 {
		t.Errorf("the privileged user cannot list nodes: %v", err)
	}
	if _, err := user.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets answered %v, want 403", err)
	}
	d.c.do("DELETE", lc, nil).must(t, 409) // an instantiated cloud cannot be deleted
	d.c.do("POST", lc+"/terminate", nil).must(t, 202)
	d.awaitCloud("ops", lifecycle.StatusTerminated)
	cs, _ := stack.Clusters[2].Clientset()
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "ops-nodes", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster role after terminate: %v", err)
	}
}

// An admin cloud changes nothing on its clusters and issues no credential.
func TestAdminLogicalCloudCreatesNothing(t *testing.T) {
	ctx := context.Background()
	before := map[string]int{}
	for _, cl := range stack.Clusters {
		cs, _ := cl.Clientset()
		ns, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[cl.Name] = len(ns.Items)
	}
	d := newDeployment(t)
	d.c.do("POST", "/projects", res(d.project, nil)).must(t, 201)
	d.cloud("admin", map[string]any{"level": "0"}, "cluster1", "cluster2")
	d.project += "-b" // the deployment below gets a project of its own
	for _, cl := range stack.Clusters {
		cs, _ := cl.Clientset()
		ns, _ := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if len(ns.Items) != before[cl.Name] {
			t.Errorf("%s: %d namespaces after an admin cloud, %d before", cl.Name, len(ns.Items), before[cl.Name])
		}
		if _, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "temco-"+d.project+"-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a CSR for an admin cloud: %v", cl.Name, err)
		}
	}
	if _, err := issuedKubeconfig(t, d.project, "admin", "cluster1"); err == nil {
		t.Error("an admin cloud got a credential")
	}
	// A DIG cannot be instantiated into a cloud that is not instantiated.
	d.apps = []app{{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")}}
	d.logicalCloud, d.setUpCloud = "later", func(d *deployment) {
		d.c.do("POST", "/projects/"+d.project+"/logical-clouds", res("later", map[string]any{"level": "0"})).must(t, 201)
	}
	d.create()
	r := d.c.do("POST", d.dig()+"/instantiate", nil).must(t, 409)
	if !strings.Contains(string(r.body), `uses logical cloud \"later\", which is not instantiated`) {
		t.Errorf("refusal: %s", r.body)
	}
}

// Updating a logical cloud applies its changes: a cluster added gets the namespace and a
// credential, a cluster removed loses both, a changed quota changes in place.
func TestLogicalCloudUpdate(t *testing.T) {
	d := newDeployment(t)
	d.c.do("POST", "/projects", res(d.project, nil)).must(t, 201)
	lc := standardCloud(d, "grow", "cluster1")
	d.c.do("POST", lc+"/cluster-quotas", res("q", map[string]any{"pods": "5"})).must(t, 201)
	d.c.do("POST", lc+"/instantiate", nil).must(t, 202)
	d.awaitCloud("grow", lifecycle.StatusInstantiated)

	d.c.do("POST", lc+"/cluster-references", res("cluster2", map[string]any{"clusterProvider": provider, "cluster": "cluster2"})).must(t, 201)
	d.c.do("DELETE", lc+"/cluster-references/cluster1", nil).must(t, 204)
	d.c.do("PUT", lc+"/cluster-quotas/q", res("q", map[string]any{"pods": "7"})).must(t, 200)
	var acc lifecycle.OpAccepted
	d.c.do("POST", lc+"/update", nil).must(t, 202).json(t, &acc)
	awaitValue(t, "logical cloud update", 2*time.Minute, func() status { return getAs[status](t, d.c, lc+"/status?status=deployed&output=summary") },
		func(s status) bool { return s.Instance == acc.ContextID && s.Status == lifecycle.StatusInstantiated })
	ctx := context.Background()
	cs1, _ := stack.Clusters[0].Clientset()
	cs2, _ := stack.Clusters[1].Clientset()
	if _, err := cs1.CoreV1().Namespaces().Get(ctx, "grow-ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster1 left the cloud but keeps its namespace: %v", err)
	}
	if _, err := issuedKubeconfig(t, d.project, "grow", "cluster1"); err == nil {
		t.Error("cluster1 left the cloud but its credential remains")
	}
	if q, err := cs2.CoreV1().ResourceQuotas("grow-ns").Get(ctx, "q", metav1.GetOptions{}); err != nil || q.Spec.Hard.Pods().String() != "7" {
		t.Errorf("cluster2 quota: %v %v", q, err)
	}
	if _, err := issuedKubeconfig(t, d.project, "grow", "cluster2"); err != nil {
		t.Errorf("cluster2 joined the cloud without a credential: %v", err)
	}
	recordHistory(t, acc.WorkflowID, "Update-logical-cloud")
	d.c.do("POST", lc+"/terminate", nil).must(t, 202)
	d.awaitCloud("grow", lifecycle.StatusTerminated)
	if _, err := cs2.CoreV1().Namespaces().Get(ctx, "grow-ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace after terminate: %v", err)
	}
}

// A standard cloud without spec.user, as dcm takes it: instantiated, its role binding
// and issued credential name temco's default user, temco:logical-cloud:<project>:<cloud>,
// and a DIG deploys into its namespace with that credential.
func TestStandardLogicalCloudWithoutUser(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.logicalCloud = "anon"
	d.setUpCloud = func(d *deployment) {
		lc := cloudPath(d, "anon")
		d.c.do("POST", "/projects/"+d.project+"/logical-clouds", res("anon", map[string]any{"namespace": "anon-ns"})).must(t, 201)
		d.c.do("POST", lc+"/cluster-references", res("cluster1", map[string]any{"clusterProvider": provider, "cluster": "cluster1"})).must(t, 201)
		grantWorkloads(d, lc, "anon-ns")
		d.c.do("POST", lc+"/instantiate", nil).must(t, 202)
		d.awaitCloud("anon", lifecycle.StatusInstantiated)
	}
	d.create()
	user := "temco:logical-cloud:" + d.project + ":anon"
	ctx := context.Background()
	cs, _ := stack.Clusters[0].Clientset()
	if rb, err := cs.RbacV1().RoleBindings("anon-ns").Get(ctx, "anon-rw", metav1.GetOptions{}); err != nil || len(rb.Subjects) != 1 || rb.Subjects[0].Name != user {
		t.Errorf("role binding %v (%v), want its subject to be %s", rb, err, user)
	}
	kc, err := issuedKubeconfig(t, d.project, "anon", "cluster1")
	if err != nil {
		t.Fatalf("no credential issued: %v", err)
	}
	if cfg, err := clientcmd.Load(kc); err != nil || cfg.AuthInfos[user] == nil {
		t.Errorf("the credential's user is not %s: %v", user, err)
	}

	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if dep, err := cs.AppsV1().Deployments("anon-ns").Get(ctx, "web", metav1.GetOptions{}); err != nil || dep.Labels[lifecycle.DeploymentIDLabel] != acc.ContextID+"-web" {
		t.Errorf("the DIG's Deployment is not in the cloud's namespace: %v %v", dep, err)
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	d.c.do("POST", cloudPath(d, "anon")+"/terminate", nil).must(t, 202)
	d.awaitCloud("anon", lifecycle.StatusTerminated)
}
