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
	u, err := url.Parse(r.Ref)
	if err != nil {
		return nil, Permanent(err)
	}
	return get(ctx, c, r.Ref, u.Host, 0)
}
