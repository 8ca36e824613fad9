package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Nodus's network chains; the dev stack's clusters define the kind (internal/dev/devstack/crds).
var sfcChainings = schema.GroupVersionResource{Group: "k8s.plugin.opnfv.org", Version: "v1alpha1", Resource: "networkchainings"}

const sfcLinkKey = "sfc.example.com/link"

func sfcLink(left, right, app, label string) map[string]any {
	return map[string]any{"leftNet": left, "rightNet": right, "linkLabel": sfcLinkKey + "=" + label, "app": app,
		"workloadResource": app, "resourceType": "Deployment"}
}

func sfcSelector(end string, pod, namespace map[string]string) map[string]any {
	return map[string]any{"chainEnd": end, "podSelector": map[string]any{"matchLabels": pod},
		"namespaceSelector": map[string]any{"matchLabels": namespace}}
}

// useSfcController registers an EMCO controller as EMCO's examples do (host sfc or
// sfcclient, priority 2) under a name of the test's own, names it in the DIG's intents
// and approves the DIG again; the registration goes when the test ends.
func (d *deployment) useSfcController(host, intent string) {
	d.t.Helper()
	name := host + "-" + d.project
	d.c.do("POST", "/controllers", res(name, map[string]any{"host": host, "port": 9056, "type": "action", "priority": 2})).must(d.t, 201)
	d.c.do("POST", d.dig()+"/intents", res(host, map[string]any{"intent": map[string]string{name: intent}})).must(d.t, 201)
	d.c.do("POST", d.dig()+"/approve", nil).must(d.t, 202)
	d.t.Cleanup(func() {
		d.terminateIfRunning()
		d.c.do("DELETE", d.dig()+"/intents/"+host, nil)
		d.c.do("DELETE", "/controllers/"+name, nil)
	})
}

// terminateIfRunning terminates the DIG if an instance of it is on the clusters.
func (d *deployment) terminateIfRunning() {
	if s := d.status(""); s.Instance != "" && s.Status == lifecycle.StatusInstantiated {
		d.operate(lifecycle.OpTerminate)
		d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	}
}

// liveChaining reads a NetworkChaining in "default" of a cluster of the stack (nil when
// there is none).
func liveChaining(t *testing.T, cluster int, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := dynClient(t, stack.Clusters[cluster]).Resource(sfcChainings).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return o
}

// podTemplateLabel is a label of a live Deployment's pod template ("" when absent).
func podTemplateLabel(t *testing.T, cluster int, deployment, key string) string {
	t.Helper()
	d := liveDeployment(t, stack.Clusters[cluster], deployment)
	if d == nil {
		t.Fatalf("cluster%d has no Deployment %s", cluster+1, deployment)
	}
	return d.Spec.Template.Labels[key]
}

// awaitPodsLabelled waits until a Deployment's pods (selected by its app label) run on
// a cluster with every one of labels.
func awaitPodsLabelled(t *testing.T, cluster int, deployment string, labels map[string]string) {
	t.Helper()
	cs, err := stack.Clusters[cluster].Clientset()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("pods of %s on cluster%d labelled %v", deployment, cluster+1, labels), 2*time.Minute, func() error {
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + deployment})
		if err != nil {
			return err
		}
		var current int
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			current++
			for k, v := range labels {
				if p.Labels[k] != v {
					return fmt.Errorf("pod %s has labels %v", p.Name, p.Labels)
				}
			}
		}
		if current == 0 {
			return fmt.Errorf("no pods")
		}
		return nil
	})
}

// listsChaining reports whether the status lists a NetworkChaining as applied with an app
// on a cluster.
func listsChaining(s status, app, cluster, name string) bool {
	for _, a := range s.Apps {
		for _, cl := range a.Clusters {
			for _, r := range cl.Resources {
				if a.Name == app && cl.Cluster == cluster && r.GVK.Kind == "NetworkChaining" && r.Name == name && r.RsyncStatus == lifecycle.ResApplied {
					return true
				}
			}
		}
	}
	return false
}

// A chain of two functions, slb (on cluster1 and cluster2) then ngfw (on cluster2): its
// NetworkChaining goes to cluster2 only, where both run, shaped as EMCO builds it, in the
// app sfc adds (EMCO's network-chain-intents), and
// each function's pods there carry its link label; an update of a link label changes
// both; terminate removes the NetworkChaining.
func TestSfcChainDeploysItsNetworkChainingWhereEveryFunctionRuns(t *testing.T) {
	d := newDeployment(t,
		app{name: "sfc-slb", chart: webChart("sfc-slb"), placement: clusterLabel("edge")},
		app{name: "sfc-ngfw", chart: webChart("sfc-ngfw"), placement: clusterNamed("cluster2")})
	d.create()
	c, chain := d.c, d.dig()+"/network-chains/sfc-e2e-chain"
	c.do("POST", d.dig()+"/network-chains", res("sfc-e2e-chain", map[string]any{"chainType": "Routing", "namespace": "default"})).must(t, 201)
	// A link label that is not "key=value" is refused with the reason.
	bad := sfcLink("left-net", "dyn1", "sfc-slb", "slb")
	bad["linkLabel"] = "slb"
	if r := c.do("POST", chain+"/links", res("bad", bad)).must(t, 400); !strings.Contains(string(r.body), "is not a label key=value") {
		t.Errorf("bad link label answered %s", r.body)
	}
	c.do("POST", chain+"/links", res("ngfw", sfcLink("dyn1", "right-net", "sfc-ngfw", "ngfw"))).must(t, 201)
	c.do("POST", chain+"/links", res("slb", sfcLink("left-net", "dyn1", "sfc-slb", "slb"))).must(t, 201)
	c.do("POST", chain+"/client-selectors", res("head", sfcSelector("left", map[string]string{"sfc": "head"}, map[string]string{"sfc": "head"}))).must(t, 201)
	c.do("POST", chain+"/client-selectors", res("tail", sfcSelector("right", map[string]string{"sfc": "tail"}, map[string]string{"sfc": "tail"}))).must(t, 201)
	c.do("POST", chain+"/provider-networks", res("left-pnet", map[string]any{"chainEnd": "left", "providerNetwork": "left-pnetwork",
		"gatewayIp": "172.30.10.2", "subnet": "172.30.10.0/24"})).must(t, 201)
	d.useSfcController("sfc", "sfc-e2e-chain")

	acc := d.operate(lifecycle.OpInstantiate)
	s := d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	nc := liveChaining(t, 1, "sfc-e2e-chain")
	if nc == nil {
		t.Fatalf("cluster2 has no NetworkChaining sfc-e2e-chain; status %s", pretty(s))
	}
	rs, _, _ := unstructured.NestedMap(nc.Object, "spec", "routingSpec")
	if got := fmt.Sprint(rs["networkChain"]); got != "net=left-net,"+sfcLinkKey+"=slb,net=dyn1,"+sfcLinkKey+"=ngfw,net=right-net" {
		t.Errorf("networkChain = %s", got)
	}
	left, right := fmt.Sprint(rs["left"]), fmt.Sprint(rs["right"])
	if want := "[map[gatewayIp:172.30.10.2 namespaceSelector:map[matchLabels:map[sfc:head]] networkName:left-pnetwork podSelector:map[matchLabels:map[sfc:head]] subnet:172.30.10.0/24]]"; left != want {
		t.Errorf("left = %s, want %s", left, want)
	}
	if want := "[map[gatewayIp: namespaceSelector:map[matchLabels:map[sfc:tail]] networkName: podSelector:map[matchLabels:map[sfc:tail]] subnet:]]"; right != want {
		t.Errorf("right = %s, want %s", right, want)
	}
	if ct, _, _ := unstructured.NestedString(nc.Object, "spec", "chainType"); ct != "Routing" || rs["namespace"] != "default" {
		t.Errorf("chainType %q, namespace %v", ct, rs["namespace"])
	}
	if id := nc.GetLabels()[lifecycle.DeploymentIDLabel]; id != acc.ContextID+"-"+sfc.ChainingApp {
		t.Errorf("NetworkChaining carries %s=%q, want it deployed with app %s of instance %s", lifecycle.DeploymentIDLabel, id, sfc.ChainingApp, acc.ContextID)
	}
	for _, cl := range []int{0, 2} {
		if liveChaining(t, cl, "sfc-e2e-chain") != nil {
			t.Errorf("cluster%d, where ngfw does not run, has the NetworkChaining", cl+1)
		}
	}
	if !listsChaining(s, sfc.ChainingApp, "cluster2", "sfc-e2e-chain") {
		t.Errorf("the status does not list the NetworkChaining as applied with app %s on cluster2: %s", sfc.ChainingApp, pretty(s.Apps))
	}

	if got := podTemplateLabel(t, 1, "sfc-slb", sfcLinkKey); got != "slb" {
		t.Errorf("sfc-slb on cluster2: pod template label %s=%q, want slb", sfcLinkKey, got)
	}
	if got := podTemplateLabel(t, 1, "sfc-ngfw", sfcLinkKey); got != "ngfw" {
		t.Errorf("sfc-ngfw on cluster2: pod template label %s=%q, want ngfw", sfcLinkKey, got)
	}
	if got := podTemplateLabel(t, 0, "sfc-slb", sfcLinkKey); got != "" {
		t.Errorf("sfc-slb on cluster1, outside the chain, got link label %q", got)
	}
	awaitPodsLabelled(t, 1, "sfc-ngfw", map[string]string{sfcLinkKey: "ngfw"})

	// Updating a link's label relabels its function and rewrites the chain.
	c.do("PUT", chain+"/links/ngfw", res("ngfw", sfcLink("dyn1", "right-net", "sfc-ngfw", "firewall"))).must(t, 200)
	d.update("update", nil)
	if got := podTemplateLabel(t, 1, "sfc-ngfw", sfcLinkKey); got != "firewall" {
		t.Errorf("after the update, sfc-ngfw's pod template label %s=%q, want firewall", sfcLinkKey, got)
	}
	if nc = liveChaining(t, 1, "sfc-e2e-chain"); nc == nil {
		t.Fatal("after the update, cluster2 has no NetworkChaining sfc-e2e-chain")
	}
	if got, _, _ := unstructured.NestedString(nc.Object, "spec", "routingSpec", "networkChain"); !strings.HasSuffix(got, sfcLinkKey+"=firewall,net=right-net") {
		t.Errorf("after the update, networkChain = %s", got)
	}
	awaitPodsLabelled(t, 1, "sfc-ngfw", map[string]string{sfcLinkKey: "firewall"})

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	eventually(t, "NetworkChaining gone from cluster2", time.Minute, func() error {
		if liveChaining(t, 1, "sfc-e2e-chain") != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

// An sfc client of another composite app's chain, in a logical cloud labelled sfc=head:
// while no client selector of the chain's left end selects that label, instantiate is
// refused with the reason and nothing is applied; once one does, the client's pods run
// with the selector's pod labels.
func TestSfcClientLabelsItsPodsWithTheSelectorOfItsCloud(t *testing.T) {
	d := newDeployment(t, app{name: "sfc-client", chart: webChart("sfc-client"), placement: clusterNamed("cluster1")})
	d.logicalCloud = "left"
	d.setUpCloud = func(d *deployment) {
		d.cloud("left", map[string]any{"level": "0", "labels": map[string]string{"sfc": "head"}}, "cluster1")
	}
	d.create()
	c := d.c
	// The chain: another composite app's DIG, never instantiated (sfcclient reads its records).
	chainCA := "/projects/" + d.project + "/composite-apps/chain/v1"
	chain := chainCA + "/deployment-intent-groups/d/network-chains/ch"
	c.do("POST", "/projects/"+d.project+"/composite-apps", res("chain", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	c.do("POST", chainCA+"/deployment-intent-groups", res("d", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "left"})).must(t, 201)
	c.do("POST", chainCA+"/deployment-intent-groups/d/network-chains", res("ch", map[string]any{"chainType": "Routing", "namespace": "default"})).must(t, 201)
	c.do("POST", chain+"/client-selectors", res("elsewhere", sfcSelector("left", map[string]string{"sfc": "elsewhere"}, map[string]string{"sfc": "elsewhere"}))).must(t, 201)
	c.do("POST", chain+"/client-selectors", res("tail", sfcSelector("right", map[string]string{"sfc": "tail"}, map[string]string{"sfc": "head"}))).must(t, 201)
	c.do("POST", d.dig()+"/sfc-clients", res("sfc-client", map[string]any{"chainEnd": "left", "sfcIntent": "ch", "compositeApp": "chain",
		"compositeAppVersion": "v1", "deploymentIntentGroup": "d", "app": "sfc-client", "workloadResource": "sfc-client",
		"resourceType": "Deployment"})).must(t, 201)
	t.Cleanup(func() { // the client names the chain: it goes first
		d.terminateIfRunning()
		c.do("DELETE", d.dig()+"/sfc-clients/sfc-client", nil)
	})
	d.useSfcController("sfcclient", "clients")

	refused := d.operate(lifecycle.OpInstantiate)
	s := d.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	want := `sfc client "sfc-client": the left end of network chain "ch" (composite app chain version v1, deployment intent group d): ` +
		`no client selector's namespace labels (elsewhere {sfc=elsewhere}) are all among the labels of logical cloud "left" {sfc=head}`
	if !strings.Contains(s.Error, want) {
		t.Errorf("status error %q does not say %q", s.Error, want)
	}
	if objs := objectsOf(t, stack.Clusters[0], refused.ContextID, "sfc-client"); len(objs) > 0 || liveDeployment(t, stack.Clusters[0], "sfc-client") != nil {
		t.Errorf("the refused instantiate applied %v", objs)
	}

	c.do("POST", chain+"/client-selectors", res("head", sfcSelector("left", map[string]string{"sfc": "head", "role": "client"}, map[string]string{"sfc": "head"}))).must(t, 201)
	// The refused instantiate left the DIG Approved, as EMCO does: it is instantiated again at once.
	if st := d.status(""); st.state() != lifecycle.StateApproved {
		t.Errorf("after the refused instantiate the DIG is %s, want Approved", st.state())
	}
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if got := podTemplateLabel(t, 0, "sfc-client", "sfc"); got != "head" {
		t.Errorf("sfc-client's pod template label sfc=%q, want head", got)
	}
	awaitPodsLabelled(t, 0, "sfc-client", map[string]string{"sfc": "head", "role": "client", "app": "sfc-client"})
}
