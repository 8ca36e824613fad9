// Package cluster does everything that talks to the managed clusters: server-side apply,
// deletion, and reading live state. Clients are cached per worker and cluster.
package cluster

import (
	"context"
	"crypto/sha256"
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

// Clients caches one client per cluster.
type Clients struct {
	Store *store.Store
	Keys  *seal.Keyring

	mu      sync.Mutex
	clients map[string]*client
}

// For returns the client of a cluster (key "provider+cluster").
func (c *Clients) For(ctx context.Context, key string) (*client, error) {
	provider, name := lifecycle.SplitClusterKey(key)
	id := "/cluster-providers/" + provider + "/clusters/" + name
	docs, err := c.Store.List(ctx, store.Query{Parent: "/cluster-providers/" + provider, Kind: "cluster", Name: name, Full: true})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q of provider %q is no longer registered", name, provider), lifecycle.ErrInvalidInput, nil)
	}
	sealed := docs[0].Secret
	if len(sealed) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q of provider %q has no kubeconfig (gitOps access is not supported by temco)", name, provider), lifecycle.ErrInvalidInput, nil)
	}
	version := sha256.Sum256(sealed)
	c.mu.Lock()
	cached := c.clients[key]
	c.mu.Unlock()
	if cached != nil && cached.version == version {
		return cached, nil
	}
	raw, err := c.Keys.Open(sealed, []byte(id))
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q: stored kubeconfig cannot be decrypted with the configured keys", key), lifecycle.ErrInvalidInput, nil)
	}
	parsed, err := kubeconfig.Parse(raw)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q: %v", key, err), lifecycle.ErrInvalidInput, nil)
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
	c.clients[key] = cl
	c.mu.Unlock()
	return cl, nil
}
