package its

import "net/netip"

// The Istio API versions EMCO's its writes.
const (
	networkingAPI = "networking.istio.io/v1beta1"
	securityAPI   = "security.istio.io/v1beta1"
	// istioNamespace holds the gateways' objects, as Istio installs its ingress gateway.
	istioNamespace = "istio-system"
)

// Kubernetes objects as plain maps: they become the manifests of the context.
type object = map[string]any

func manifest(apiVersion, kind, name, namespace string, body object) object {
	o := object{"apiVersion": apiVersion, "kind": kind, "metadata": object{"name": name, "namespace": namespace}}
	for k, v := range body {
		o[k] = v
	}
	return o
}

// ingressSelector picks Istio's ingress gateway pods, as every gateway of EMCO's does.
var ingressSelector = map[string]string{"istio": "ingressgateway"}

// gatewayServer is one server of a Gateway.
type gatewayServer struct {
	portName, protocol string
	port               int
	hosts              []string
	tls                object // nil: no tls block
}

func gateway(name, namespace string, s gatewayServer) object {
	server := object{
		"port":  object{"name": s.portName, "number": s.port, "protocol": s.protocol},
		"hosts": s.hosts,
		"name":  "tls", // EMCO names every server so, whatever its protocol
	}
	if s.tls != nil {
		server["tls"] = s.tls
	}
	return manifest(networkingAPI, "Gateway", name, namespace, object{"spec": object{
		"selector": ingressSelector,
		"servers":  []any{server},
	}})
}

// serviceEntry describes a ServiceEntry of the mesh (location MESH_INTERNAL, DNS
// resolution, one TCP-named port).
type serviceEntry struct {
	hosts     []string
	addresses []string // the client entries' VIP
	exportTo  []string
	endpoints []any
	port      int
	protocol  string
}

func newServiceEntry(name, namespace string, se serviceEntry) object {
	spec := object{
		"hosts":      se.hosts,
		"location":   "MESH_INTERNAL",
		"resolution": "DNS",
		"ports":      []any{object{"name": "tcp", "number": se.port, "protocol": se.protocol}},
		"endpoints":  se.endpoints,
	}
	if len(se.addresses) > 0 {
		spec["addresses"] = se.addresses
	}
	if len(se.exportTo) > 0 {
		spec["exportTo"] = se.exportTo
	}
	return manifest(networkingAPI, "ServiceEntry", name, namespace, object{"spec": spec})
}

// gatewayEndpoint reaches a server cluster through its ingress gateway's port.
func gatewayEndpoint(gw gatewayAddr) object {
	return object{"address": gw.address, "ports": object{"tcp": gw.port}}
}

// destinationRule has the sidecars speak Istio's mutual TLS to host.
func destinationRule(name, namespace, host string) object {
	return manifest(networkingAPI, "DestinationRule", name, namespace, object{"spec": object{
		"host":          host,
		"trafficPolicy": object{"tls": object{"mode": "ISTIO_MUTUAL"}},
	}})
}

// virtualService routes what the external gateway receives on gatewayPort to the
// service's port.
func virtualService(name, namespace, svc, host, gatewayName string, gatewayPort, port int) object {
	return manifest(networkingAPI, "VirtualService", name, namespace, object{"spec": object{
		"hosts":    []string{host},
		"gateways": []string{gatewayName},
		"http": []any{object{
			"name":  svc + "-http-route",
			"match": []any{object{"port": gatewayPort}},
			"route": []any{object{"destination": object{"host": svc, "port": object{"number": port}}}},
		}},
	}})
}

// credential is the Secret the external gateway's TLS reads (credentialName); the
// certificates and key are base64 already, as EMCO takes them.
func credential(name string, caCert, cert, key string) object {
	data := object{"tls.crt": cert, "tls.key": key}
	if caCert != "" {
		data["ca.crt"] = caCert
	}
	return manifest("v1", "Secret", name, istioNamespace, object{"type": "Opaque", "data": data})
}

// authRule is one operation an access point allows.
type authRule struct {
	methods, paths, hosts []string
}

func authorizationPolicy(name, namespace string, selector map[string]string, rules []authRule) object {
	rs := make([]any, len(rules))
	for i, r := range rules {
		op := object{"hosts": r.hosts}
		if len(r.methods) > 0 {
			op["methods"] = r.methods
		}
		if len(r.paths) > 0 {
			op["paths"] = r.paths
		}
		rs[i] = object{"to": []any{object{"operation": op}}}
	}
	return manifest(securityAPI, "AuthorizationPolicy", name, namespace, object{"spec": object{
		"selector": object{"matchLabels": selector},
		"action":   "ALLOW",
		"rules":    rs,
	}})
}

// firstVIP is the first address EMCO gives a client ServiceEntry (240.0.0.0/4 is
// reserved, so no real service has it); lastVIP its last.
var (
	firstVIP = netip.MustParseAddr("240.0.0.2")
	lastVIP  = netip.MustParseAddr("240.0.0.255")
)
