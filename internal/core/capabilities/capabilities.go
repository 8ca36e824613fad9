// Package capabilities is what a chart may ask of the cluster it is rendered for
// (.Capabilities): the cluster's Kubernetes version and the API versions it serves, read
// through discovery, as `helm install` reads them. Clusters with the same capabilities
// share one render.
package capabilities

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/discovery"
)

// Capabilities are one cluster's.
type Capabilities struct {
	KubeVersion string   // e.g. "v1.35.4"
	APIVersions []string // "v1", "apps/v1", "apps/v1/Deployment", ... sorted
}

// Key names a set of capabilities: clusters with equal ones have the same key.
func (c Capabilities) Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s", c.KubeVersion, strings.Join(c.APIVersions, "\n"))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Discover reads a cluster's capabilities, as Helm does: its version, and every served
// group-version and kind. An aggregated API that does not answer is left out, as Helm
// leaves it out.
func Discover(d discovery.DiscoveryInterface) (Capabilities, error) {
	v, err := d.ServerVersion()
	if err != nil {
		return Capabilities{}, fmt.Errorf("read the server version: %w", err)
	}
	apis, err := APIVersions(d)
	if err != nil {
		return Capabilities{}, err
	}
	return Capabilities{KubeVersion: v.GitVersion, APIVersions: apis}, nil
}

// APIVersions lists the served group-versions and kinds as Helm's capabilities do.
func APIVersions(d discovery.DiscoveryInterface) ([]string, error) {
	groups, resources, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover the APIs: %w", err)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		for _, v := range g.Versions {
			seen[v.GroupVersion] = true
		}
	}
	for _, l := range resources {
		for _, r := range l.APIResources {
			seen[l.GroupVersion+"/"+r.Kind] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}
