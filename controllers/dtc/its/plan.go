package its

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The cluster kv-pairs EMCO's its reads: where a cluster's Istio ingress gateway is
// reached from other clusters, its port for mesh traffic (Port, seen from outside;
// InternalPort, the gateway's own), and its external HTTPS and HTTP ports.
const (
	kvAddress      = "istioIngressGatewayAddress"
	kvPort         = "istioIngressGatewayPort"
	kvInternalPort = "istioIngressGatewayInternalPort"
	kvHTTPSPort    = "istioIngressGatewayHttpsPort"
	kvHTTPPort     = "istioIngressGatewayHttpPort"
)

// world is what planning reads besides the traffic group.
type world struct {
	namespace string              // the logical cloud's
	clusters  map[string][]string // app -> its clusters ("provider+cluster"), sorted
	// kv holds each cluster's values of the kv-pairs above (absent keys are missing).
	kv map[string]map[string]string
	// keys are the external services' private keys, by inbound intent name (only those
	// the Secrets need).
	keys map[string][]byte
}

// placed is one object for one app on one cluster.
type placed struct {
	app, cluster string
	obj          object
}

// planner turns a traffic group into objects; it does no I/O.
type planner struct {
	w    world
	out  []placed
	next netip.Addr // the next client VIP
	// policies gather each server app's access points on each of its clusters into one
	// AuthorizationPolicy, in the order they were first met.
	policies map[[2]string]*policy
	order    [][2]string
}

type policy struct {
	selector map[string]string
	rules    []authRule
}

// plan returns the objects of every inbound intent of g that uses Istio, or a Refusal.
func plan(w world, g *dtc.TrafficGroup) ([]placed, error) {
	p := &planner{w: w, next: firstVIP, policies: map[[2]string]*policy{}}
	for _, isi := range g.Inbound {
		if isi.Spec.ServiceMesh != "istio" {
			continue // another mesh's, or none: nps alone handles it
		}
		if err := p.inbound(isi); err != nil {
			return nil, err
		}
	}
	for _, k := range p.order {
		pol := p.policies[k]
		p.add(k[0], k[1], authorizationPolicy(k[0], w.namespace, pol.selector, pol.rules))
	}
	return p.out, nil
}

func (p *planner) add(app, cluster string, objs ...object) {
	for _, o := range objs {
		p.out = append(p.out, placed{app: app, cluster: cluster, obj: o})
	}
}

// inbound plans one inbound intent: client entries on the client clusters the server is
// not on (one set per cluster, given to the first client there), the external gateway
// on every server cluster, the cross-cluster gateway on server clusters a client is away
// from, and the access points.
func (p *planner) inbound(isi dtc.Inbound) error {
	sp := isi.Spec
	where := fmt.Sprintf("inbound intent %q", isi.Name)
	servers, ok := p.w.clusters[sp.App]
	if !ok {
		return contract.Refuse("%s: app %q is not an app of the deployment", where, sp.App)
	}
	covered := map[string]bool{}
	for _, c := range servers {
		covered[c] = true
	}
	var clientClusters []string
	for _, cl := range isi.Clients {
		cs, ok := p.w.clusters[cl.Spec.App]
		if !ok {
			return contract.Refuse("%s, client %q: app %q is not an app of the deployment", where, cl.Name, cl.Spec.App)
		}
		clientClusters = append(clientClusters, cs...)
		for _, c := range cs {
			if covered[c] {
				continue
			}
			covered[c] = true
			objs, err := p.clientEntries(isi, cl, servers, c)
			if err != nil {
				return err
			}
			p.add(cl.Spec.App, c, objs...)
		}
	}
	if sp.ExternalSupport && sp.Management.SidecarProxy == "yes" {
		for _, s := range servers {
			objs, err := p.externalEntries(isi, s)
			if err != nil {
				return err
			}
			p.add(sp.App, s, objs...)
		}
	}
	for _, s := range servers {
		for _, c := range clientClusters {
			if c != s {
				objs, err := p.serverEntries(isi, s, c)
				if err != nil {
					return err
				}
				p.add(sp.App, s, objs...)
				break
			}
		}
	}
	return p.accessPoints(isi, servers)
}

// host is the name the service has in the mesh on one of its clusters.
func (p *planner) host(svc, cluster string) string {
	provider, name := lifecycle.SplitClusterKey(cluster)
	return svc + "." + p.w.namespace + "." + provider + "." + name
}

// clientEntries are what a client cluster without the server needs to reach it: a VIP
// for the server's names, reached through every server cluster's ingress gateway
// (EMCO's picks the gateway of the server cluster at the client's index instead: a
// second client reaches nothing, or its code panics), and mutual TLS to those names.
func (p *planner) clientEntries(isi dtc.Inbound, cl dtc.Client, servers []string, cluster string) ([]object, error) {
	sp := isi.Spec
	if p.next.Compare(lastVIP) > 0 {
		return nil, contract.Refuse("inbound intent %q, client %q on %s: the traffic group's client ServiceEntries have used every address from %s to %s",
			isi.Name, cl.Name, cluster, firstVIP, lastVIP)
	}
	vip := p.next.String()
	p.next = p.next.Next()
	hosts := make([]string, len(servers))
	endpoints := make([]any, len(servers))
	for i, s := range servers {
		hosts[i] = p.host(sp.ServiceName, s)
		need := fmt.Sprintf("inbound intent %q: the ServiceEntry of client %q on %s reaching %s on %s", isi.Name, cl.Name, cluster, sp.ServiceName, s)
		gw, err := p.gateway(s, need)
		if err != nil {
			return nil, err
		}
		endpoints[i] = gatewayEndpoint(gw)
	}
	entry := serviceEntry{hosts: hosts, addresses: []string{vip}, endpoints: endpoints, port: sp.Port, protocol: sp.Protocol}
	short := entry
	short.hosts = []string{sp.ServiceName}
	objs := []object{
		newServiceEntry(sp.ServiceName+"-se-client0", p.w.namespace, entry),
		newServiceEntry(sp.ServiceName+"-se-client1", p.w.namespace, short),
	}
	for i, h := range hosts {
		objs = append(objs, destinationRule(sp.ServiceName+"-dr-client"+strconv.Itoa(i), p.w.namespace, h))
	}
	return append(objs, destinationRule(sp.ServiceName+"-dr-client-svcname", p.w.namespace, sp.ServiceName)), nil
}

// serverEntries let the server cluster's ingress gateway pass mesh traffic for the
// service through to it (a client is on remote).
func (p *planner) serverEntries(isi dtc.Inbound, server, remote string) ([]object, error) {
	sp := isi.Spec
	port, err := p.port(server, kvInternalPort,
		fmt.Sprintf("inbound intent %q: the Gateway letting clients on %s reach %s on %s", isi.Name, remote, sp.ServiceName, server))
	if err != nil {
		return nil, err
	}
	host := p.host(sp.ServiceName, server)
	return []object{
		gateway(sp.ServiceName+"-gateway", istioNamespace, gatewayServer{portName: "tls", protocol: "TLS", port: port,
			hosts: []string{host}, tls: object{"mode": "AUTO_PASSTHROUGH"}}),
		newServiceEntry(sp.ServiceName+"-se-server", istioNamespace, serviceEntry{hosts: []string{host}, exportTo: []string{"."},
			endpoints: []any{object{"address": sp.ServiceName + "." + p.w.namespace}}, port: sp.Port, protocol: sp.Protocol}),
		destinationRule(sp.ServiceName+"-se-server-dr", istioNamespace, host),
	}, nil
}

// externalEntries expose the service outside the mesh under its external name: a Gateway
// on the ingress gateway's HTTPS port (MUTUAL or SIMPLE TLS, with the Secret holding the
// certificates) or HTTP port (NONE), and a VirtualService routing it to the service.
func (p *planner) externalEntries(isi dtc.Inbound, server string) ([]object, error) {
	sp := isi.Spec
	where := fmt.Sprintf("inbound intent %q", isi.Name)
	if sp.ExternalName == "" {
		return nil, contract.Refuse("%s: externalSupport with sidecarProxy yes needs spec.externalName, the name clients outside the mesh use", where)
	}
	var key, protocol, suffix string
	switch sp.Management.TLSType {
	case "MUTUAL", "SIMPLE":
		key, protocol, suffix = kvHTTPSPort, "HTTPS", strings.ToLower(sp.Management.TLSType)
	case "NONE":
		key, protocol, suffix = kvHTTPPort, "HTTP", "http"
	default:
		return nil, contract.Refuse("%s: externalSupport with sidecarProxy yes needs spec.management.tlsType MUTUAL, SIMPLE or NONE", where)
	}
	port, err := p.port(server, key, fmt.Sprintf("%s: the external Gateway of %s on %s", where, sp.ServiceName, server))
	if err != nil {
		return nil, err
	}
	credName := sp.ServiceName + "-credential"
	gw := gatewayServer{portName: "extsvc", protocol: protocol, port: port, hosts: []string{sp.ExternalName}}
	if protocol == "HTTPS" {
		gw.tls = object{"mode": sp.Management.TLSType, "credentialName": credName}
	}
	gwName := sp.ServiceName + "-ext-" + suffix + "-gateway"
	objs := []object{
		gateway(gwName, p.w.namespace, gw),
		virtualService(sp.ServiceName+"-vs-"+gwName, p.w.namespace, sp.ServiceName, sp.ExternalName, gwName, port, sp.Port),
	}
	if protocol != "HTTPS" {
		return objs, nil
	}
	secret, err := p.credential(isi, credName)
	if err != nil {
		return nil, err
	}
	return append(objs, secret), nil
}

// credential checks the external certificates (base64, as EMCO takes them; never
// quoting them) and makes the Secret.
func (p *planner) credential(isi dtc.Inbound, name string) (object, error) {
	certs := isi.Spec.External.ExternalCerts
	key := string(p.w.keys[isi.Name])
	fields := []struct{ field, value string }{{"serviceCertificate", certs.ServiceCertificate}, {"servicePrivateKey", key}}
	ca := ""
	if isi.Spec.Management.TLSType == "MUTUAL" {
		ca = certs.CACertificate
		fields = append(fields, struct{ field, value string }{"caCertificate", ca})
	}
	for _, f := range fields {
		if f.value == "" {
			return nil, contract.Refuse("inbound intent %q: tlsType %s needs spec.external.externalCerts.%s for Secret %s/%s",
				isi.Name, isi.Spec.Management.TLSType, f.field, istioNamespace, name)
		}
		if _, err := base64.StdEncoding.DecodeString(f.value); err != nil {
			return nil, contract.Refuse("inbound intent %q: spec.external.externalCerts.%s is not base64 (send the PEM base64-encoded, as EMCO takes it)",
				isi.Name, f.field)
		}
	}
	return credential(name, ca, certs.ServiceCertificate, key), nil
}

// accessPoints gathers the clients' access points into the server app's policy on each
// of its clusters.
func (p *planner) accessPoints(isi dtc.Inbound, servers []string) error {
	sp := isi.Spec
	hosts := []string{sp.ServiceName + "." + p.w.namespace, sp.ServiceName + "." + p.w.namespace + ".svc.cluster.local", sp.ServiceName}
	if sp.ExternalSupport && sp.Management.SidecarProxy == "yes" {
		hosts = append(hosts, sp.ExternalName)
	}
	var rules []authRule
	for _, cl := range isi.Clients {
		for _, ap := range cl.AccessPoints {
			rules = append(rules, authRule{methods: ap.Spec.Access, paths: ap.Spec.URL, hosts: hosts})
		}
	}
	if len(rules) == 0 {
		return nil
	}
	k, v, err := dtc.ParseLabel("spec.appLabel", sp.AppLabel)
	if err != nil {
		return contract.Refuse("inbound intent %q: %v", isi.Name, err)
	}
	for _, s := range servers {
		key := [2]string{sp.App, s}
		pol, ok := p.policies[key]
		if !ok {
			pol = &policy{selector: map[string]string{k: v}}
			p.policies[key], p.order = pol, append(p.order, key)
		}
		pol.rules = append(pol.rules, rules...)
	}
	return nil
}

// gatewayAddr is a server cluster's ingress gateway as other clusters reach it.
type gatewayAddr struct {
	address string
	port    int
}

func (p *planner) gateway(cluster, need string) (gatewayAddr, error) {
	addr, err := p.value(cluster, kvAddress, need)
	if err != nil {
		return gatewayAddr{}, err
	}
	port, err := p.port(cluster, kvPort, need)
	return gatewayAddr{address: addr, port: port}, err
}

// value is a kv-pair of the cluster; a missing one is refused, saying what needs it.
func (p *planner) value(cluster, key, need string) (string, error) {
	v, ok := p.w.kv[cluster][key]
	if !ok || v == "" {
		provider, name := lifecycle.SplitClusterKey(cluster)
		return "", contract.Refuse("%s needs kv-pair %s of cluster %s, which none of its kv-pairs resources sets "+
			"(add it: POST /v2/cluster-providers/%s/clusters/%s/kv-pairs)", need, key, cluster, provider, name)
	}
	return v, nil
}

func (p *planner) port(cluster, key, need string) (int, error) {
	v, err := p.value(cluster, key, need)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, contract.Refuse("%s needs kv-pair %s of cluster %s, which is %q, not a port number", need, key, cluster, v)
	}
	return n, nil
}
