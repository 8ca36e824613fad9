// Package cluster talks to the managed clusters for the operations: server-side apply,
// deletion, and reading live state. Clients are cached per worker and cluster. The
// per-cluster activities of other domains (features/drift/work) reach the clusters with
// the same machinery through Access (access.go).
package cluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/temporal"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/lru"

	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/kubeconfig"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// client is one cluster as the activities see it: a shared connection and the namespace
// its kubeconfig context names.
type client struct {
	*conn
	namespace string // the kubeconfig context's namespace ("" if none)
}

// conn is shared by every cluster reached through the same API server with the same
// credentials (clusters that differ only in their context namespace, or edge clusters
// behind one gateway). What the server publishes is its endpoint's, shared by every
// credential used there.
type conn struct {
	dyn  dynamic.Interface
	rest rest.Interface    // raw requests (server-side apply without decoding the answer)
	auth http.RoundTripper // the endpoint's transport with these credentials
	*endpoint
}

// endpoint is one API server as every credential used on it sees it: one HTTP transport
// (its pool of connections), and what the server publishes, the same for every
// credential: its APIs (discovery and the REST mapper over it), its OpenAPI schemas and
// capabilities. Those are read with the credentials of the connection used there last
// (any credential may read them), so one revoked since is replaced by the next cluster's.
type endpoint struct {
	transport *http.Transport
	last      atomic.Pointer[http.RoundTripper] // the last connection's auth
	disco     discovery.CachedDiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper // over disco: a Reset reads the APIs again
	mapped    sync.Map                                // schema.GroupVersionKind -> *meta.RESTMapping found (restMapping)
	schemas   *schemaIndex                            // where the server publishes its OpenAPI schemas
	shared    *Schemas                                // the schemas parsed, shared by every cluster
	caps      capsCache
}

// RoundTrip sends a request of the endpoint's own with the last connection's credentials.
func (e *endpoint) RoundTrip(req *http.Request) (*http.Response, error) {
	return (*e.last.Load()).RoundTrip(req)
}

// registration is a cluster's parsed credentials, cached until they change.
type registration struct {
	version   [32]byte // hash of the sealed kubeconfig: a re-registered cluster is parsed anew
	cfg       *rest.Config
	namespace string
}

// DefaultMaxConns bounds the connections (credentials) and the endpoints (servers, each
// with its HTTP transport and discovery cache) a worker keeps: the least recently used
// beyond it are dropped, their idle connections closed. A fleet larger than this costs a
// discovery per cluster and operation, not unbounded memory or sockets.
const DefaultMaxConns = 2000

// connsPerTransport caps the connections of one transport (HTTP/2 multiplexes requests
// on one; a server that speaks only HTTP/1.1 gets a few), so that thousands of concurrent
// requests to one server never open thousands of sockets.
const connsPerTransport = 16

// idleConnTimeout closes a transport's connections unused for that long.
const idleConnTimeout = 90 * time.Second

// Clients caches each cluster's credentials (and those of each logical cloud used
// there), one connection per server and credentials, and one endpoint per server and TLS
// identity, the latter two bounded (MaxConns).
type Clients struct {
	Store       *store.Store
	Keys        *seal.Keyring
	Credentials *credentials.Store
	Git         *gitops.Writer // commits GitOps clusters' desired state (nil: GitOps clusters fail)
	Schemas     Schemas        // the clusters' OpenAPI schemas (see schema.go)
	MaxConns    int            // 0: DefaultMaxConns

	once      sync.Once
	agentsOf  *agent.Store // the agent clusters' work (agent.go)
	mu        sync.Mutex   // guards clients, and makes one conn or endpoint at a time
	clients   map[string]*registration
	conns     *lru.Cache // connKey -> *conn
	endpoints *lru.Cache // endpointKey -> *endpoint
}

func (c *Clients) init() {
	c.once.Do(func() {
		n := cmp.Or(c.MaxConns, DefaultMaxConns)
		c.clients = map[string]*registration{}
		if c.Store != nil {
			c.agentsOf = agent.Open(c.Store.Database())
		}
		c.conns = lru.New(n)
		c.endpoints = lru.NewWithEvictionFunc(n, func(_ lru.Key, e any) { e.(*endpoint).transport.CloseIdleConnections() })
	})
}

// agents is where agent clusters' work is published.
func (c *Clients) agents() *agent.Store {
	c.init()
	return c.agentsOf
}

func permanentf(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
}

// For returns a client of a cluster (key "provider+cluster"): with the cluster's
// registered credentials, or with those temco issued to logical cloud cloud ("" for none).
func (c *Clients) For(ctx context.Context, key, cloud string) (*client, error) {
	raw, sealed, err := c.kubeconfig(ctx, key, cloud)
	if err != nil {
		return nil, err
	}
	return c.client(key, cloud, raw, sealed)
}

// client returns a client of a cluster's credentials, parsed anew when they changed.
func (c *Clients) client(key, cloud string, raw, sealed []byte) (*client, error) {
	c.init()
	version := sha256.Sum256(sealed)
	cacheKey := key + "|" + cloud
	c.mu.Lock()
	reg := c.clients[cacheKey]
	c.mu.Unlock()
	if reg == nil || reg.version != version {
		parsed, err := kubeconfig.Parse(raw)
		if err != nil {
			return nil, permanentf("cluster %q: %v", key, err)
		}
		reg = &registration{version: version, cfg: parsed.Config, namespace: parsed.Namespace}
		c.mu.Lock()
		c.clients[cacheKey] = reg
		c.mu.Unlock()
	}
	cn, err := c.conn(reg.cfg)
	if err != nil {
		return nil, err
	}
	return &client{conn: cn, namespace: reg.namespace}, nil
}

// conn returns the shared connection for cfg's server and credentials.
func (c *Clients) conn(cfg *rest.Config) (*conn, error) {
	c.init()
	key := connKey(cfg)
	if cn, ok := c.conns.Get(key); ok {
		cn := cn.(*conn)
		cn.last.Store(&cn.auth)
		return cn, nil
	}
	c.mu.Lock() // one creation at a time: a cold batch asks for the same one at once
	defer c.mu.Unlock()
	if cn, ok := c.conns.Get(key); ok {
		return cn.(*conn), nil
	}
	ep, err := c.endpoint(cfg)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	// The endpoint's transport has the server's TLS settings; the config keeps what goes in
	// headers (token, basic auth, impersonation).
	cfg.TLSClientConfig, cfg.Transport = rest.TLSClientConfig{}, ep.transport
	auth, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	// Many objects per activity, many activities per worker: the default 5 QPS would throttle.
	cfg.QPS, cfg.Burst, cfg.Timeout = 200, 400, 30*time.Second
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rc, err := rawClient(cfg)
	if err != nil {
		return nil, err
	}
	cn := &conn{dyn: dyn, rest: rc, auth: auth, endpoint: ep}
	ep.last.Store(&cn.auth)
	c.conns.Add(key, cn)
	return cn, nil
}

// endpoint returns the endpoint of cfg's server and TLS identity (c.mu held). Its
// requests go out with the credentials of the last connection made or used there.
func (c *Clients) endpoint(cfg *rest.Config) (*endpoint, error) {
	key := endpointKey(cfg)
	if ep, ok := c.endpoints.Get(key); ok {
		return ep.(*endpoint), nil
	}
	tlsConf, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, permanentf("the kubeconfig's TLS settings: %v", err)
	}
	ep := &endpoint{shared: &c.Schemas, transport: utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig:     tlsConf,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxConnsPerHost:     connsPerTransport,
		MaxIdleConnsPerHost: connsPerTransport,
		IdleConnTimeout:     idleConnTimeout,
		Proxy:               cfg.Proxy, // the kubeconfig's proxy-url (nil: the environment's)
	})}
	own := &rest.Config{Host: cfg.Host, APIPath: cfg.APIPath, Transport: ep, QPS: 200, Burst: 400, Timeout: 30 * time.Second}
	disco, err := discovery.NewDiscoveryClientForConfig(own)
	if err != nil {
		return nil, err
	}
	rc, err := rawClient(own)
	if err != nil {
		return nil, err
	}
	ep.disco = memory.NewMemCacheClient(disco)
	ep.mapper = restmapper.NewDeferredDiscoveryRESTMapper(ep.disco)
	ep.schemas = newSchemaIndex(rc)
	c.endpoints.Add(key, ep)
	return ep, nil
}

// rawClient makes a REST client that sends bodies as they are and does not decode answers.
func rawClient(cfg *rest.Config) (rest.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.UnversionedRESTClientFor(cfg)
}

// connKey identifies a server and the credentials used on it.
func connKey(cfg *rest.Config) [32]byte {
	e := endpointKey(cfg)
	return hashOf(e[:], []byte(cfg.BearerToken), []byte(cfg.Username), []byte(cfg.Password), []byte(cfg.Impersonate.UserName))
}

// endpointKey identifies a server and the TLS identity used on it. A kubeconfig with a
// proxy-url (a function, not comparable) gets an endpoint of its own.
func endpointKey(cfg *rest.Config) [32]byte {
	t := cfg.TLSClientConfig
	proxy := ""
	if cfg.Proxy != nil {
		proxy = fmt.Sprintf("%p", cfg.Proxy)
	}
	return hashOf([]byte(cfg.Host), []byte(cfg.APIPath), []byte(t.ServerName), []byte(fmt.Sprint(t.Insecure)), t.CAData, t.CertData, t.KeyData,
		[]byte(proxy))
}

func hashOf(fields ...[]byte) [32]byte {
	h := sha256.New()
	for _, f := range fields {
		fmt.Fprintf(h, "%d:", len(f))
		h.Write(f)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// kubeconfig loads (and opens) the credentials to use; sealed is their stored form, which
// changes whenever they do.
func (c *Clients) kubeconfig(ctx context.Context, key, cloud string) (raw, sealed []byte, err error) {
	if cloud != "" {
		raw, sealed, err = c.Credentials.Get(ctx, cloud, key)
		if errors.Is(err, credentials.ErrNotFound) {
			return nil, nil, permanentf("logical cloud %s has no credential on cluster %q: instantiate (or update) the logical cloud", cloud, key)
		}
		return raw, sealed, err
	}
	doc, err := c.clusterDoc(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	return c.open(key, doc)
}

// clusterDoc reads a cluster's registration; one that is gone is a permanent error.
func (c *Clients) clusterDoc(ctx context.Context, key string) (*store.Doc, error) {
	provider, name := lifecycle.SplitClusterKey(key)
	// By _id, and kept from one operation to the next while the cluster is unchanged
	// (store.GetCurrent): no read per cluster and operation.
	parent := "/cluster-providers/" + provider
	if g, ok := ctx.Value(siblingsKey{}).(*siblings); ok {
		g.once.Do(func() { c.prefetch(ctx, g.keys) })
	}
	doc, err := c.Store.GetCurrent(ctx, parent+"/clusters/"+name, parent)
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, permanentf("cluster %q of provider %q is no longer registered", name, provider)
	}
	return doc, err
}

// siblings are the clusters of the group a cluster's work is in: the first of them to
// read its registration has theirs read with it (prefetch).
type siblings struct {
	keys []string
	once sync.Once
}

type siblingsKey struct{}

// withSiblings marks ctx as the context of a group's clusters, keys.
func withSiblings(ctx context.Context, keys []string) context.Context {
	return context.WithValue(ctx, siblingsKey{}, &siblings{keys: keys})
}

// prefetch has the store keep, provider by provider, the registrations of keys it does not
// keep yet, in one read when there are many (store.Prefetch). A failure is left to each
// cluster's own read, which reports it.
func (c *Clients) prefetch(ctx context.Context, keys []string) {
	ids := map[string][]string{}
	for _, k := range keys {
		provider, name := lifecycle.SplitClusterKey(k)
		parent := "/cluster-providers/" + provider
		ids[parent] = append(ids[parent], parent+"/clusters/"+name)
	}
	for parent, of := range ids {
		if len(of) >= store.PrefetchMin {
			_ = c.Store.Prefetch(ctx, parent, model.KindCluster, of)
		}
	}
}

// open opens the kubeconfig sealed in a cluster's registration.
func (c *Clients) open(key string, doc *store.Doc) (raw, sealed []byte, err error) {
	sealed = doc.Secret
	if len(sealed) == 0 {
		return nil, nil, permanentf("cluster %q has no kubeconfig", key)
	}
	raw, err = c.Keys.Open(sealed, []byte(doc.ID))
	if err != nil {
		return nil, nil, permanentf("cluster %q: stored kubeconfig cannot be decrypted with the configured keys", key)
	}
	return raw, sealed, nil
}

// Admin returns the cluster's registered REST configuration (logical cloud set-up).
func (c *Clients) Admin(ctx context.Context, key string) (*rest.Config, error) {
	raw, _, err := c.kubeconfig(ctx, key, "")
	if err != nil {
		return nil, err
	}
	parsed, err := kubeconfig.Parse(raw)
	if err != nil {
		return nil, permanentf("cluster %q: %v", key, err)
	}
	return parsed.Config, nil
}
