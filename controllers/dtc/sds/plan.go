package sds

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/temco/temco/controllers/dtc"
)

// Labels and annotation that make the objects sds applies findable: by whom (managedBy),
// for which DIG instance (instanceLabel, the context that began it) and, for people, which
// DIG and inbound intent.
const (
	FieldManager     = "temco-sds"
	managedByLabel   = "app.kubernetes.io/managed-by"
	managedBy        = "temco-sds"
	instanceLabel    = "sds.temco.io/instance"
	digAnnotation    = "sds.temco.io/deployment-intent-group"
	intentAnnotation = "sds.temco.io/inbound-intent"
)

// discovery is what one inbound intent asks of sds: make the server's service resolvable
// on the clients' clusters that do not run the server.
type discovery struct {
	Inbound string // the inbound intent's name
	Service string // the server's Service, and the name of the objects sds makes
	Servers []string
	Targets []string // client clusters without the server, sorted
}

// discoveries lists, per inbound intent with clients placed away from the server, where
// the server runs and where its entries go. Clients without an app name are left out, as
// EMCO leaves them.
func discoveries(g *dtc.TrafficGroup, placed map[string][]string) []discovery {
	var out []discovery
	for _, isi := range g.Inbound {
		if isi.Spec.App == "" || isi.Spec.ServiceName == "" {
			continue
		}
		servers := slices.Sorted(slices.Values(placed[isi.Spec.App]))
		var targets []string
		for _, cl := range isi.Clients {
			if cl.Spec.App == "" {
				continue
			}
			for _, c := range placed[cl.Spec.App] {
				if !slices.Contains(servers, c) {
					targets = append(targets, c)
				}
			}
		}
		slices.Sort(targets)
		targets = slices.Compact(targets)
		if len(servers) > 0 && len(targets) > 0 {
			out = append(out, discovery{Inbound: isi.Name, Service: isi.Spec.ServiceName, Servers: servers, Targets: targets})
		}
	}
	return out
}

// address is where one server cluster's service is reached from outside it.
type address struct {
	Cluster string
	IP      string
	// Ports are the Service's ports; Reach is the port each is reached on at IP (the node
	// port of a NodePort Service, else the port itself).
	Ports []corev1.ServicePort
	Reach []int32
}

// addressOf is where a live server Service is reached: its LoadBalancer's ingress IP, or
// for a NodePort Service the cluster's first node (by name) at its node ports. Any other
// type cannot be reached from another cluster.
func addressOf(cluster string, svc *corev1.Service, nodes []corev1.Node) (address, error) {
	a := address{Cluster: cluster, Ports: svc.Spec.Ports}
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				a.IP = in.IP
				break
			}
		}
		if a.IP == "" {
			return a, fmt.Errorf("Service %s/%s on %s has no LoadBalancer ingress IP yet", svc.Namespace, svc.Name, cluster)
		}
		for _, p := range svc.Spec.Ports {
			a.Reach = append(a.Reach, p.Port)
		}
	case corev1.ServiceTypeNodePort:
		if a.IP = nodeIP(nodes); a.IP == "" {
			return a, fmt.Errorf("cluster %s has no node with an address to reach NodePort Service %s/%s on", cluster, svc.Namespace, svc.Name)
		}
		for _, p := range svc.Spec.Ports {
			if p.NodePort == 0 {
				return a, fmt.Errorf("Service %s/%s on %s: port %d has no node port yet", svc.Namespace, svc.Name, cluster, p.Port)
			}
			a.Reach = append(a.Reach, p.NodePort)
		}
	default:
		return a, fmt.Errorf("Service %s/%s on %s is of type %s, neither NodePort nor LoadBalancer: other clusters cannot reach it",
			svc.Namespace, svc.Name, cluster, typeOf(svc))
	}
	return a, nil
}

func typeOf(svc *corev1.Service) corev1.ServiceType {
	if svc.Spec.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return svc.Spec.Type
}

// nodeIP is the first node's (by name) InternalIP, else its first address.
func nodeIP(nodes []corev1.Node) string {
	if len(nodes) == 0 {
		return ""
	}
	n := slices.MinFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, addr := range n.Status.Addresses {
		if addr.Type == corev1.NodeInternalIP {
			return addr.Address
		}
	}
	if len(n.Status.Addresses) > 0 {
		return n.Status.Addresses[0].Address
	}
	return ""
}

// owner says whose the objects are: the labels and annotations every one carries.
type owner struct {
	Instance string // the DIG instance's first context id
	DIG      string // the DIG's path, for people
}

func (o owner) labels() map[string]string {
	return map[string]string{managedByLabel: managedBy, instanceLabel: o.Instance}
}

func (o owner) selector() string {
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: o.labels()})
}

// entry is the headless Service and the Endpoints sds puts on one client cluster for one
// inbound intent.
type entry struct {
	Service   *corev1ac.ServiceApplyConfiguration
	Endpoints *corev1ac.EndpointsApplyConfiguration
}

// key names an object on a cluster: "namespace/name".
func (e entry) key() string { return *e.Service.Namespace + "/" + *e.Service.Name }

// entryFor is EMCO's service-discovery pair: a headless ClusterIP Service named like the
// server's, with its ports (each named after its number), and Endpoints of the same name
// at each server cluster's address. The Service takes the first server cluster's ports.
func entryFor(o owner, d discovery, ns string, addrs []address) entry {
	svc := corev1ac.ServiceSpec().WithClusterIP(corev1.ClusterIPNone).WithSessionAffinity(corev1.ServiceAffinityNone).
		WithType(corev1.ServiceTypeClusterIP)
	for _, p := range addrs[0].Ports {
		svc.WithPorts(corev1ac.ServicePort().WithName(portName(p.Port)).WithProtocol(p.Protocol).WithPort(p.Port).
			WithTargetPort(intstr.FromInt32(p.Port)))
	}
	eps := corev1ac.Endpoints(d.Service, ns)
	for _, a := range addrs {
		subset := corev1ac.EndpointSubset().WithAddresses(corev1ac.EndpointAddress().WithIP(a.IP))
		for i, p := range a.Ports {
			subset.WithPorts(corev1ac.EndpointPort().WithName(portName(p.Port)).WithProtocol(p.Protocol).WithPort(a.Reach[i]))
		}
		eps.WithSubsets(subset)
	}
	notes := map[string]string{digAnnotation: o.DIG, intentAnnotation: d.Inbound}
	eps.WithLabels(o.labels()).WithAnnotations(notes)
	return entry{
		Service:   corev1ac.Service(d.Service, ns).WithLabels(o.labels()).WithAnnotations(notes).WithSpec(svc),
		Endpoints: eps,
	}
}

func portName(port int32) string { return strconv.Itoa(int(port)) }
