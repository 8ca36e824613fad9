package policy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// Agent is a registered agent: EMCO's address of its events service, and what temco adds
// to bind its events to their source: the clusters it reports on and how its stream is
// secured.
type Agent struct {
	ID   string `json:"id,omitempty"`
	Addr string `json:"addr"`
	// Clusters are the clusters whose apps the agent reports on: its events reach only the
	// DIGs with apps placed on one of them. None (EMCO's registration): the agent is
	// stored, unbound, and not listened to until it is registered with its clusters.
	Clusters []ClusterRef `json:"clusters"`
	// TLS dials the agent over TLS; nil: plain gRPC, as EMCO's agents serve.
	TLS *AgentTLS `json:"tls,omitempty"`
	// Token is sent to the agent as gRPC metadata (authorization: Bearer <token>). Stored
	// sealed: the body and every answer hold TokenMask instead.
	Token string `json:"token,omitempty"`
}

// ClusterRef names a registered cluster, as a logical cloud's cluster references do.
type ClusterRef struct {
	ClusterProvider string `json:"clusterProvider"`
	Cluster         string `json:"cluster"`
}

// Key is the cluster as placements name it (provider+cluster).
func (c ClusterRef) Key() string { return lifecycle.ClusterKey(c.ClusterProvider, c.Cluster) }

// ID is the cluster's store id.
func (c ClusterRef) ID() string {
	return "/cluster-providers/" + c.ClusterProvider + "/clusters/" + c.Cluster
}

// AgentTLS is how the agent's TLS certificate is verified: by CA (PEM; empty: the
// worker's system roots), for ServerName (empty: the host of the agent's address).
type AgentTLS struct {
	CA         string `json:"ca,omitempty"`
	ServerName string `json:"serverName,omitempty"`
}

// TokenMask stands for a stored token in bodies and answers; registering again with it
// keeps the stored token.
const TokenMask = "********"

// Limits of a registration: an agent reports on at most MaxAgentClusters clusters (the
// listener reads each one's placements per context), its CA and token are bounded.
const (
	MaxAgentClusters = 100
	maxCABytes       = 64 << 10
	maxTokenBytes    = 4096
	// maxUnboundAddrBytes bounds an unbound agent's address, kept as written.
	maxUnboundAddrBytes = 253
)

// Unbound is why an agent registered without clusters is not listened to (its status's
// lastError).
const Unbound = "bound to no cluster: temco listens to it once it is registered with clusters ({clusterProvider, cluster}), the clusters whose apps it reports on"

// Bound reports whether the agent names the clusters it reports on: only then is it
// listened to (an unbound agent could deliver no event).
func (a *Agent) Bound() bool { return len(a.Clusters) > 0 }

// Validate checks the clusters, the CA, the token and, for a bound agent, the address
// (host:port, which temco dials; EMCO dials whatever it is given and fails later, out of
// sight). An unbound agent's address is EMCO's registration as written (EMCO's example
// has a placeholder there): temco dials no unbound agent, and checks the address when the
// agent is registered with its clusters.
func (a *Agent) Validate() error {
	if err := validateClusters(a.Clusters); err != nil {
		return err
	}
	addrErr := validateAddr(a.Addr)
	if a.Bound() && addrErr != nil {
		return addrErr
	}
	if !a.Bound() && (len(a.Addr) > maxUnboundAddrBytes || strings.ContainsFunc(a.Addr, unicode.IsControl)) {
		return fmt.Errorf("addr must be a line of at most %d bytes", maxUnboundAddrBytes)
	}
	if a.TLS != nil {
		if _, err := a.TLS.Config(); err != nil {
			return err
		}
	}
	if len(a.Token) > maxTokenBytes {
		return fmt.Errorf("token is longer than %d bytes", maxTokenBytes)
	}
	for _, r := range a.Token {
		if r < '!' || r > '~' {
			return errors.New("token must be printable ASCII without spaces (it is sent as gRPC metadata)")
		}
	}
	return nil
}

func validateAddr(addr string) error {
	if addr == "" {
		return errors.New("addr is required: the agent's events service, host:port")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || strings.ContainsAny(addr, "/@?# ") {
		return fmt.Errorf("addr %q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("addr %q: port %q is not 1-65535", addr, port)
	}
	return nil
}

// validateClusters checks the clusters an agent is bound to, if any.
func validateClusters(cs []ClusterRef) error {
	if len(cs) > MaxAgentClusters {
		return fmt.Errorf("clusters names %d clusters: the limit is %d", len(cs), MaxAgentClusters)
	}
	seen := make(map[string]bool, len(cs))
	for i, c := range cs {
		if err := model.ValidateName(fmt.Sprintf("clusters[%d].clusterProvider", i), c.ClusterProvider); err != nil {
			return err
		}
		if err := model.ValidateName(fmt.Sprintf("clusters[%d].cluster", i), c.Cluster); err != nil {
			return err
		}
		if seen[c.Key()] {
			return fmt.Errorf("clusters[%d]: %s/%s is named twice", i, c.ClusterProvider, c.Cluster)
		}
		seen[c.Key()] = true
	}
	return nil
}

// Config is the TLS client configuration that verifies the agent.
func (t *AgentTLS) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if len(t.CA) > maxCABytes {
		return nil, fmt.Errorf("tls.ca is longer than %d bytes", maxCABytes)
	}
	if t.CA != "" {
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM([]byte(t.CA)) {
			return nil, errors.New("tls.ca holds no PEM certificate: give the CA that signed the agent's certificate")
		}
	}
	if len(t.ServerName) > 253 || strings.ContainsAny(t.ServerName, " /:@") {
		return nil, fmt.Errorf("tls.serverName %.40q is not a host name", t.ServerName)
	}
	return cfg, nil
}

// ClaimedAgents are the agent ids an event claims, other than registered (the agent that
// delivered it): its agentId and its spec's agentId (what EMCO's policies read), each once.
func ClaimedAgents(registered, agentID string, agentSpec json.RawMessage) []string {
	var spec struct {
		AgentID string `json:"agentId"`
	}
	_ = json.Unmarshal(agentSpec, &spec) // no spec, or not an object: it claims nothing
	var out []string
	for _, id := range []string{agentID, spec.AgentID} {
		if id != "" && id != registered && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
