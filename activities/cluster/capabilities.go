// A cluster's capabilities (its Kubernetes version and APIs), for rendering charts that
// read them: read through its API, or from the facts the monitor of a GitOps cluster
// reports.

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capabilities"
)

// capsFresh is how long a connection's capabilities are used before they are read again
// (a CRD applied meanwhile, by temco or anyone, then shows).
const capsFresh = 30 * time.Second

// capsCache holds a connection's capabilities as last read.
type capsCache struct {
	mu   sync.Mutex
	caps *capabilities.Capabilities
	read time.Time
}

// Capabilities reads the capabilities of cluster key as the context whose header is given
// reaches it (with its logical cloud's credentials, if any).
func (c *Clients) Capabilities(ctx context.Context, key string, header *appctx.Context) (capabilities.Capabilities, error) {
	tg, err := c.target(ctx, key, header)
	if err != nil {
		return capabilities.Capabilities{}, err
	}
	switch t := tg.(type) {
	case *client:
		return t.capabilities()
	case *gitCluster:
		return t.capabilities(ctx)
	}
	return capabilities.Capabilities{}, fmt.Errorf("cluster %s: no way to read its capabilities", key)
}

func (c *client) capabilities() (capabilities.Capabilities, error) {
	c.caps.mu.Lock()
	defer c.caps.mu.Unlock()
	if c.caps.caps != nil && time.Since(c.caps.read) < capsFresh {
		return *c.caps.caps, nil
	}
	c.disco.Invalidate()
	caps, err := capabilities.Discover(c.disco)
	if err != nil {
		return caps, err
	}
	c.caps.caps, c.caps.read = &caps, time.Now()
	return caps, nil
}

// capabilities are what the cluster's monitor last reported.
func (g *gitCluster) capabilities(ctx context.Context) (capabilities.Capabilities, error) {
	b, _, err := g.writer.ReadFile(ctx, g.statusRemote(), gitops.FactsPath(g.key))
	if err != nil {
		return capabilities.Capabilities{}, err
	}
	if b == nil {
		return capabilities.Capabilities{}, errors.New("its gitops-monitor has reported no facts")
	}
	var f gitops.Facts
	if err := json.Unmarshal(b, &f); err != nil {
		return capabilities.Capabilities{}, fmt.Errorf("the facts cluster %s reports through git: %w", g.key, err)
	}
	return capabilities.Capabilities{KubeVersion: f.KubeVersion, APIVersions: f.APIVersions}, nil
}
