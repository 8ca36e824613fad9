package sources

import (
	"context"
	"net/url"

	"github.com/temco/temco/internal/core/artifact"
)

// urlTransport: an archive at an http(s) URL, pinned by the sha256 its source gives.
type urlTransport struct{}

func (urlTransport) Resolve(_ context.Context, src artifact.Source, _ *Client) (artifact.Resolved, error) {
	return artifact.Resolved{Ref: src.URL, Digest: src.Digest, Blob: src.Digest}, nil
}

func (urlTransport) Download(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, error) {
	u, err := urlOf(r.Ref)
	if err != nil {
		return nil, err
	}
	return get(ctx, c, r.Ref, u.Host, 0)
}

// Provenance is the archive's URL + ".prov".
func (urlTransport) Provenance(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, string, error) {
	return provenanceURL(ctx, r, c)
}

func urlOf(ref string) (*url.URL, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, Permanent(err)
	}
	return u, nil
}
