// Package cluster does everything that talks to the managed clusters: server-side apply,
// deletion, and reading live state. Clients are cached per worker and cluster.
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

	"github.com/temco/temco/internal/credentials"
	"github.com/temco/temco/internal/kubeconfig"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/seal"
	"github.com/temco/temco/internal/store"
)

// client is a cached connection to one cluster.
type client struct {
	version   [32]byte // hash of the sealed kubeconfig: a re-registered cluster gets a new client
	dyn       dynamic.Interface
	rest      rest.Interface // raw requests (server-side apply without decoding the answer)
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	namespace string // the kubeconfig context's namespace ("" if none)
}

// Clients caches one client per cluster (and per logical cloud whose own credentials
// are used there).
type Clients struct {
	Store       *store.Store
	Keys        *seal.Keyring
	Credentials *credentials.Store

	mu      sync.Mutex
	clients map[string]*client
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
	cfg := parsed.Config
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
	cl := &client{version: version, dyn: dyn, rest: rc, namespace: parsed.Namespace,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
	c.mu.Lock()
	if c.clients == nil {
		c.clients = map[string]*client{}
	}
	c.clients[cacheKey] = cl
	c.mu.Unlock()
	return cl, nil
}

// kubeconfig loads (and opens) the credentials to use; sealed is their stored form, which
// changes whenever they do.
func (c *Clients) kubeconfig(ctx context.Context, key, cloud string) (raw, sealed []byte, err error) {
	provider, name := lifecycle.SplitClusterKey(key)
	if cloud != "" {
		raw, sealed, err = c.Credentials.Get(ctx, cloud, key)
		if errors.Is(err, credentials.ErrNotFound) {
			return nil, nil, permanentf("logical cloud %s has no credential on cluster %q: instantiate (or update) the logical cloud", cloud, key)
		}
		return raw, sealed, err
	}
	docs, err := c.Store.List(ctx, store.Query{Parent: "/cluster-providers/" + provider, Kind: "cluster", Name: name, Full: true})
	if err != nil {
		return nil, nil, err
	}
	if len(docs) == 0 {
		return nil, nil, permanentf("cluster %q of provider %q is no longer registered", name, provider)
	}
	sealed = docs[0].Secret
	if len(sealed) == 0 {
		return nil, nil, permanentf("cluster %q of provider %q has no kubeconfig (gitOps access is not supported by temco)", name, provider)
	}
	raw, err = c.Keys.Open(sealed, []byte(docs[0].ID))
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
