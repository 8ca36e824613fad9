package sources

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/temco/temco/internal/core/artifact"
)

// maxIndex bounds a Helm repository's index.yaml (large public ones are tens of MiB).
const maxIndex = 64 << 20

// helmRepoTransport: a chart in a Helm repository, pinned by its index.yaml entry's digest.
type helmRepoTransport struct{}

func (helmRepoTransport) Resolve(ctx context.Context, src artifact.Source, c *Client) (artifact.Resolved, error) {
	base := strings.TrimSuffix(src.HelmRepo, "/")
	u, err := url.Parse(base)
	if err != nil {
		return artifact.Resolved{}, Permanent(err)
	}
	data, err := get(ctx, c, base+"/index.yaml", u.Host, maxIndex)
	if err != nil {
		return artifact.Resolved{}, err
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return artifact.Resolved{}, Permanent(fmt.Errorf("%s/index.yaml: %v", base, err))
	}
	idx.SortEntries()
	entry, err := idx.Get(src.Chart, src.Version)
	if err != nil {
		return artifact.Resolved{}, Permanent(fmt.Errorf("%s/index.yaml has no chart %q of version %q", base, src.Chart, src.Version))
	}
	if len(entry.URLs) == 0 {
		return artifact.Resolved{}, Permanent(fmt.Errorf("%s/index.yaml: chart %s %s has no URL", base, src.Chart, entry.Version))
	}
	ref, err := repo.ResolveReferenceURL(base, entry.URLs[0])
	if err != nil {
		return artifact.Resolved{}, Permanent(fmt.Errorf("%s/index.yaml: chart %s %s: %v", base, src.Chart, entry.Version, err))
	}
	digest := src.Digest
	if entry.Digest != "" {
		d, err := artifact.ParseDigest(entry.Digest)
		if err != nil {
			return artifact.Resolved{}, Permanent(fmt.Errorf("%s/index.yaml: chart %s %s: %v", base, src.Chart, entry.Version, err))
		}
		if digest != "" && digest != d {
			return artifact.Resolved{}, Permanent(&Mismatch{Ref: ref, Want: digest, Got: d + " (in index.yaml)"})
		}
		digest = d
	}
	if digest == "" {
		return artifact.Resolved{}, Permanent(fmt.Errorf("%s/index.yaml gives no digest for chart %s %s: give one in the source's digest", base, src.Chart, entry.Version))
	}
	return artifact.Resolved{Ref: ref, Version: entry.Version, Digest: digest, Blob: digest}, nil
}

func (helmRepoTransport) Download(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, error) {
	return urlTransport{}.Download(ctx, r, c)
}

// Provenance is the .prov beside the entry's archive (its URL + ".prov"), as Helm fetches it.
func (helmRepoTransport) Provenance(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, string, error) {
	return provenanceURL(ctx, r, c)
}
