// Package cluster talks to the managed clusters for the operations: server-side apply,
// deletion, and reading live state. Clients are cached per worker and cluster. The
// per-cluster activities of other domains (activities/drift) reach the clusters with
// the same machinery through Access (access.go).
package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/kubeconfig"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// client is one cluster as the activities see it: a shared connection and the namespace
// its kubeconfig context names.
type client struct {
	version [32]byte // hash of the sealed kubeconfig: a re-registered cluster gets a new client
	*conn
	namespace string // the kubeconfig context's namespace ("" if none)
}

// conn is shared by every cluster reached through the same API server with the same
// credentials (clusters that differ only in their context namespace, or edge clusters
// behind one gateway): one HTTP/2 connection pool, one discovery cache, not one per cluster.
type conn struct {
	dyn     dynamic.Interface
	rest    rest.Interface // raw requests (server-side apply without decoding the answer)
	disco   discovery.CachedDiscoveryInterface
	mapper  *restmapper.DeferredDiscoveryRESTMapper // over disco: a Reset reads the APIs again
	schemas *schemaIndex                            // where the server publishes its OpenAPI schemas
	shared  *Schemas                                // the schemas parsed, shared by every cluster
	caps    capsCache
}

// Clients caches one client per cluster (and per logical cloud whose own credentials
// are used there).
type Clients struct {
	Store       *store.Store
	Keys        *seal.Keyring
	Credentials *credentials.Store
	Git         *gitops.Writer // commits GitOps clusters' desired state (nil: GitOps clusters fail)
	Schemas     Schemas        // the clusters' OpenAPI schemas (see schema.go)

	mu      sync.Mutex
	clients map[string]*client
	conns   map[[32]byte]*conn
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

// client returns the cached client of a cluster's credentials, made anew when they changed.
func (c *Clients) client(key, cloud string, raw, sealed []byte) (*client, error) {
	version := sha256.Sum256(sealed)
	cacheKey := key + "|" + cloud
	c.mu.Lock()
	cached := c.clients[cacheKey]
	c.mu.Unlock()
	if cached != nil && cached.version == version {
		return cached, nil
	}
	parsed, err := kubeconfig.Parse(raw)
	if err != nil {
		return nil, permanentf("cluster %q: %v", key, err)
	}
	cn, err := c.conn(parsed.Config)
	if err != nil {
		return nil, err
	}
	cl := &client{version: version, conn: cn, namespace: parsed.Namespace}
	c.mu.Lock()
	if c.clients == nil {
		c.clients = map[string]*client{}
	}
	c.clients[cacheKey] = cl
	c.mu.Unlock()
	return cl, nil
}

// conn returns the shared connection for cfg's server and credentials.
func (c *Clients) conn(cfg *rest.Config) (*conn, error) {
	key := connKey(cfg)
	c.mu.Lock()
	cn := c.conns[key]
	c.mu.Unlock()
	if cn != nil {
		return cn, nil
	}
	cfg = rest.CopyConfig(cfg)
	// Many objects per activity, many activities per worker: the default 5 QPS would throttle.
	cfg.QPS, cfg.Burst, cfg.Timeout = 200, 400, 30*time.Second
	cfg.Dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rcfg := rest.CopyConfig(cfg)
	rcfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(rcfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(disco)
	cn = &conn{dyn: dyn, rest: rc, disco: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached),
		schemas: newSchemaIndex(rc), shared: &c.Schemas}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns = map[[32]byte]*conn{}
	}
	if existing := c.conns[key]; existing != nil { // another activity won the race
		return existing, nil
	}
	c.conns[key] = cn
	return cn, nil
}

// connKey identifies a server and the credentials used on it.
func connKey(cfg *rest.Config) [32]byte {
	h := sha256.New()
	t := cfg.TLSClientConfig
	for _, f := range [][]byte{[]byte(cfg.Host), []byte(cfg.APIPath), []byte(cfg.BearerToken), []byte(cfg.Username),
		[]byte(cfg.Password), []byte(cfg.Impersonate.UserName), []byte(t.ServerName), []byte(fmt.Sprint(t.Insecure)),
		t.CAData, t.CertData, t.KeyData} {
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
	// By _id: the one lookup per cluster and operation must not scan the collection.
	doc, err := c.Store.Get(ctx, "/cluster-providers/"+provider+"/clusters/"+name)
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, permanentf("cluster %q of provider %q is no longer registered", name, provider)
	}
	return doc, err
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
