package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
)

// The annotations ovnaction writes into a workload's pod template.
const (
	nfnAnnotation    = "k8s.plugin.opnfv.org/nfn-network"
	multusAnnotation = "k8s.v1.cni.cncf.io/networks"
)

// ovnDeployment is a deployment of one app (a Deployment named like the app) on the
// "edge" clusters, with EMCO's ovnaction registered as its examples do and a
// network-controller-intent "nci" whose workload intent "<app>-wi" names the Deployment.
type ovnDeployment struct {
	*deployment
	app, controller string
	interfaces      []string // the interfaces' resource names, for clean-up
}

func (o *ovnDeployment) workloadIntent() string {
	return o.dig() + "/network-controller-intent/nci/workload-intents/" + o.app + "-wi"
}

func newOvnDeployment(t *testing.T, appName string, interfaces map[string]map[string]any) *ovnDeployment {
	t.Helper()
	o := &ovnDeployment{deployment: newDeployment(t, app{name: appName, chart: webChart(appName), placement: clusterLabel("edge")}), app: appName}
	o.create()
	c := o.c
	c.do("POST", o.dig()+"/network-controller-intent", res("nci", nil)).must(t, 201)
	c.do("POST", o.dig()+"/network-controller-intent/nci/workload-intents", res(appName+"-wi", map[string]any{
		"app": appName, "workloadResource": appName, "type": "Deployment"})).must(t, 201)
	for name, spec := range interfaces {
		c.do("POST", o.workloadIntent()+"/interfaces", res(name, spec)).must(t, 201)
		o.interfaces = append(o.interfaces, name)
	}
	o.controller = o.useController("ovnaction", "action", "nci")
	t.Cleanup(o.cleanUp)
	return o
}

// cleanUp terminates the DIG if it ever ran and deletes what the test created, so later
// tests find the stack (and the global controller registry) as it was.
func (o *ovnDeployment) cleanUp() {
	t := o.t
	if s := o.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
		o.operate(lifecycle.OpTerminate)
		o.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	}
	var paths []string
	for _, i := range o.interfaces {
		paths = append(paths, o.workloadIntent()+"/interfaces/"+i)
	}
	for _, p := range append(paths, o.workloadIntent(), o.dig()+"/network-controller-intent/nci",
		o.dig()+"/intents/"+o.controller+"-intents", o.dig()+"/intents/intents",
		o.dig()+"/generic-placement-intents/gpi/app-intents/"+o.app+"-placement", o.dig()+"/generic-placement-intents/gpi",
		o.dig(), "/controllers/"+o.controller) {
		if r := o.c.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
			t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
		}
	}
}

// applyNetworks creates networks on a cluster, with kv-pairs when given, applies its
// network intents and waits until they are applied; the clean-up terminates them and
// deletes what it created.
func applyNetworks(t *testing.T, cl *devstack.Cluster, kv map[string]any, nets map[string]string) {
	t.Helper()
	n := clusterNet{t: t, c: &client{t: t}, cl: cl}
	var created []string
	t.Cleanup(func() {
		n.c.do("POST", n.path()+"/terminate", nil).must(t, 202)
		n.await("network intents of "+cl.Name+" terminated", "?status=deployed&output=summary",
			func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusTerminated })
		for _, p := range created {
			n.c.do("DELETE", p, nil).must(t, 204)
		}
	})
	if kv != nil {
		n.c.do("POST", n.path()+"/kv-pairs", res("ovnaction-cni", map[string]any{"kv": []any{kv}})).must(t, 201)
		created = append(created, n.path()+"/kv-pairs/ovnaction-cni")
	}
	for name, cidr := range nets {
		prefix := strings.TrimSuffix(cidr, "0/24")
		n.c.do("POST", n.path()+"/networks", res(name, network(subnet("subnet1", cidr, prefix+"1/24")))).must(t, 201)
		created = append(created, n.path()+"/networks/"+name)
	}
	n.c.do("POST", n.path()+"/apply", nil).must(t, 202)
	n.await("network intents of "+cl.Name+" applied", "?status=deployed&output=summary",
		func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusInstantiated })
}

// podAnnotations reads the pod template annotations of a live Deployment.
func podAnnotations(t *testing.T, cl *devstack.Cluster, name string) map[string]string {
	t.Helper()
	d := liveDeployment(t, cl, name)
	if d == nil {
		t.Fatalf("%s has no Deployment %s", cl.Name, name)
	}
	return d.Spec.Template.Annotations
}

// ovnaction as EMCO's vFW example uses it: the Deployment's pods get their interfaces on
// the clusters' networks, through Multus on cluster1 (EMCO's default) and straight from
// Nodus on cluster2 (its kv-pairs say so); an update without one interface takes it off
// the live Deployment.
func TestOvnactionAnnotatesTheWorkloadsPodsAndAnUpdateRemovesAnInterface(t *testing.T) {
	c1, c2 := stack.Clusters[0], stack.Clusters[1]
	nets := map[string]string{"ovnaction-net1": "172.16.33.0/24", "ovnaction-net2": "172.16.34.0/24"}
	applyNetworks(t, c1, nil, nets)
	applyNetworks(t, c2, map[string]any{"CNI-Networking-Nodus-CNI-For-all-interfaces": "true"}, nets)
	o := newOvnDeployment(t, "ovn-web", map[string]map[string]any{
		"if1": {"interface": "eth1", "name": "ovnaction-net1", "ipAddress": "172.16.33.5", "defaultGateway": "true"},
		"if2": {"interface": "eth2", "name": "ovnaction-net2", "macAddress": "0a:58:ac:10:22:05"},
	})

	o.operate(lifecycle.OpInstantiate)
	o.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	both := `{"type":"ovn4nfv","interface":[{"interface":"eth1","name":"ovnaction-net1","defaultGateway":"true","ipAddress":"172.16.33.5"},` +
		`{"interface":"eth2","name":"ovnaction-net2","defaultGateway":"false","macAddress":"0a:58:ac:10:22:05"}]}`
	multus := `[{"name":"ovn-networkobj","namespace":"default"}]`
	for _, cl := range []*devstack.Cluster{c1, c2} {
		a := podAnnotations(t, cl, o.app)
		if a[nfnAnnotation] != both {
			t.Errorf("%s: pod annotation %s = %q, want %q", cl.Name, nfnAnnotation, a[nfnAnnotation], both)
		}
		want, has := a[multusAnnotation]
		switch {
		case cl == c1 && want != multus:
			t.Errorf("cluster1 (Multus, EMCO's default): pod annotation %s = %q, want %q", multusAnnotation, want, multus)
		case cl == c2 && has:
			t.Errorf("cluster2 (Nodus for all interfaces): pod annotation %s = %q, want none", multusAnnotation, want)
		}
	}
	if liveDeployment(t, stack.Clusters[2], o.app) != nil {
		t.Errorf("cluster3, where the app is not placed, has Deployment %s", o.app)
	}

	// The update renders the Deployment afresh: the annotation loses eth2.
	o.c.do("DELETE", o.workloadIntent()+"/interfaces/if2", nil).must(t, 204)
	o.interfaces = []string{"if1"}
	o.update("update", nil)
	one := `{"type":"ovn4nfv","interface":[{"interface":"eth1","name":"ovnaction-net1","defaultGateway":"true","ipAddress":"172.16.33.5"}]}`
	for _, cl := range []*devstack.Cluster{c1, c2} {
		if got := podAnnotations(t, cl, o.app)[nfnAnnotation]; got != one {
			t.Errorf("after the update, %s: pod annotation %s = %q, want %q", cl.Name, nfnAnnotation, got, one)
		}
	}
}

// An interface on a network the clusters do not have: instantiate fails before anything
// is applied, and the DIG's status says which interface, network and cluster.
func TestOvnactionRefusesAnInterfaceOnAnUnknownNetwork(t *testing.T) {
	o := newOvnDeployment(t, "ovn-refused", map[string]map[string]any{
		"if1": {"interface": "eth1", "name": "no-such-net"},
	})
	acc := o.operate(lifecycle.OpInstantiate)
	s := o.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	for _, part := range []string{`workload intent "ovn-refused-wi"`, `interface "if1"`, `network "no-such-net"`, "cluster " + provider + "+cluster1"} {
		if !strings.Contains(s.Error, part) {
			t.Errorf("status error %q does not say %s", s.Error, part)
		}
	}
	if n := s.RsyncStatus[lifecycle.ResApplied]; n != 0 {
		t.Errorf("rsync-status %v, want nothing applied", s.RsyncStatus)
	}
	for _, cl := range stack.Clusters {
		if objs := objectsOf(t, cl, acc.ContextID, o.app); len(objs) > 0 || liveDeployment(t, cl, o.app) != nil {
			t.Errorf("%s has %v of the app, want nothing", cl.Name, objs)
		}
	}
	t.Log("refused:", s.Error)
}
