package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/temco/temco/internal/core/artifact"
)

// ociTransport: a chart in an OCI registry, as Helm pushes it, pinned by its manifest's
// digest. Fetched with oras-go one step at a time, never whole: the manifest (at most
// maxManifest bytes), then each layer only once the size the manifest declares for it is
// within artifact.MaxSize, read no further than that size and checked against its digest.
type ociTransport struct{}

// maxManifest bounds a manifest and a chart's config (its Chart.yaml as JSON): oras's own
// bound for metadata.
const maxManifest = 4 << 20

// repository reaches repo ("host/path") with the project's credentials for its host only:
// never the worker's own (or its user's Docker) logins, which oras alone never reads.
func (ociTransport) repository(c *Client, repo string, plainHTTP bool) (*remote.Repository, error) {
	r, err := remote.NewRepository(repo)
	if err != nil {
		return nil, Permanent(err)
	}
	r.PlainHTTP, r.MaxMetadataBytes = plainHTTP, maxManifest
	r.Client = &auth.Client{Client: c.HTTP, Cache: auth.NewCache(), Credential: func(_ context.Context, h string) (auth.Credential, error) {
		if cr, ok := c.credential(h); ok {
			return auth.Credential{Username: cr.Username, Password: cr.Password}, nil
		}
		return auth.EmptyCredential, nil
	}}
	return r, nil
}

func (t ociTransport) Resolve(ctx context.Context, src artifact.Source, c *Client) (artifact.Resolved, error) {
	repo := strings.TrimPrefix(src.OCI, "oci://")
	r := artifact.Resolved{Version: src.Version, PlainHTTP: src.PlainHTTP}
	rr, err := t.repository(c, repo, src.PlainHTTP)
	if err != nil {
		return r, err
	}
	// Pinned, the tag is not asked for; the digest is, so that a chart the registry does
	// not have (or the project may not read) fails here, before anything else.
	ref := repo + "@" + src.Digest
	if src.Digest == "" {
		ref = repo + ":" + strings.ReplaceAll(src.Version, "+", "_") // Helm's tags: '+' is '_'
	}
	desc, err := rr.Resolve(ctx, ref)
	if err != nil {
		return r, ociFailure(ref, err)
	}
	r.Ref, r.Digest = repo+"@"+desc.Digest.String(), desc.Digest.String()
	return r, nil
}

func (t ociTransport) Download(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, error) {
	m, err := t.manifest(ctx, r, c)
	if err != nil {
		return nil, err
	}
	layer, ok := m.layer(registry.ChartLayerMediaType, registry.LegacyChartLayerMediaType)
	if !ok {
		return nil, Permanent(fmt.Errorf("%s: the manifest has no layer of type %s", r.Ref, registry.ChartLayerMediaType))
	}
	return m.blob(ctx, "chart", layer, artifact.MaxSize)
}

// Provenance is the manifest's provenance layer (Helm pushes the .prov beside the chart
// as one); the archive's file name is <chart>-<version>.tgz, as `helm package` names it,
// from the manifest's config.
func (t ociTransport) Provenance(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, string, error) {
	m, err := t.manifest(ctx, r, c)
	if err != nil {
		return nil, "", err
	}
	layer, ok := m.layer(registry.ProvLayerMediaType)
	if !ok {
		return nil, "", Permanent(fmt.Errorf("%s: the manifest has no layer of type %s", r.Ref, registry.ProvLayerMediaType))
	}
	prov, err := m.blob(ctx, "provenance", layer, artifact.MaxSize)
	if err != nil {
		return nil, "", err
	}
	name := ""
	if m.Config.MediaType == registry.ConfigMediaType {
		config, err := m.blob(ctx, "config", m.Config, maxManifest)
		if err != nil {
			return nil, "", err
		}
		var meta chart.Metadata
		if err := json.Unmarshal(config, &meta); err != nil {
			return nil, "", Permanent(fmt.Errorf("%s: the manifest's config: %w", r.Ref, err))
		}
		name = meta.Name + "-" + meta.Version + ".tgz"
	}
	return prov, name, nil
}

// ociManifest is the manifest a Resolved pins, with the repository its blobs are in.
type ociManifest struct {
	ocispec.Manifest
	ref  string
	repo *remote.Repository
}

// manifest fetches the manifest r pins: at most maxManifest bytes, checked against r's
// digest.
func (t ociTransport) manifest(ctx context.Context, r artifact.Resolved, c *Client) (*ociManifest, error) {
	repo, _, _ := strings.Cut(r.Ref, "@")
	rr, err := t.repository(c, repo, r.PlainHTTP)
	if err != nil {
		return nil, err
	}
	desc, data, err := oras.FetchBytes(ctx, rr.Manifests(), r.Digest, oras.FetchBytesOptions{MaxBytes: maxManifest})
	if err != nil {
		return nil, ociFailure(r.Ref, err)
	}
	if desc.Digest.String() != r.Digest {
		return nil, Permanent(&Mismatch{Ref: r.Ref, Want: r.Digest, Got: desc.Digest.String()})
	}
	m := &ociManifest{ref: r.Ref, repo: rr}
	if err := json.Unmarshal(data, &m.Manifest); err != nil {
		return nil, Permanent(fmt.Errorf("%s: the manifest: %w", r.Ref, err))
	}
	if len(m.Layers) == 0 {
		return nil, Permanent(fmt.Errorf("%s: the manifest (%s) has no layers: not a chart", r.Ref, desc.MediaType))
	}
	return m, nil
}

// layer is the manifest's first layer of one of the media types.
func (m *ociManifest) layer(mediaTypes ...string) (ocispec.Descriptor, bool) {
	for _, l := range m.Layers {
		for _, t := range mediaTypes {
			if l.MediaType == t {
				return l, true
			}
		}
	}
	return ocispec.Descriptor{}, false
}

// blob reads the blob d describes, what names it in errors: refused at once when the size
// it declares is over limit, read no further than that size, checked against its digest.
func (m *ociManifest) blob(ctx context.Context, what string, d ocispec.Descriptor, limit int64) ([]byte, error) {
	if d.Size > limit || d.Size < 0 {
		return nil, Permanent(fmt.Errorf("%s: the manifest's %s layer is %d bytes, over the %d allowed", m.ref, what, d.Size, limit))
	}
	if err := d.Digest.Validate(); err != nil {
		return nil, Permanent(fmt.Errorf("%s: the manifest's %s layer: %w", m.ref, what, err))
	}
	rc, err := m.repo.Blobs().Fetch(ctx, d)
	if err != nil {
		return nil, ociFailure(m.ref, err)
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, d.Size))
	if _, err := io.Copy(buf, io.LimitReader(rc, d.Size+1)); err != nil {
		return nil, fmt.Errorf("%s: %s layer: %w", m.ref, what, err)
	}
	if int64(buf.Len()) != d.Size {
		return nil, Permanent(fmt.Errorf("%s: the %s layer is not the %d bytes its manifest says", m.ref, what, d.Size))
	}
	if got := d.Digest.Algorithm().FromBytes(buf.Bytes()); got != d.Digest {
		return nil, Permanent(&Mismatch{Ref: m.ref + " (" + what + " layer)", Want: d.Digest.String(), Got: got.String()})
	}
	return buf.Bytes(), nil
}

// ociFailure classifies a registry client's error: what the registry refused or does not
// have is permanent; an unreachable or failing registry is tried again.
func ociFailure(ref string, err error) error {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		switch code := resp.StatusCode; {
		case code == http.StatusTooManyRequests || code >= 500:
			return fmt.Errorf("%s: %w", ref, err)
		case code >= 400:
			return Permanent(fmt.Errorf("%s: %w", ref, err))
		}
	}
	if errors.Is(err, errdef.ErrNotFound) || errors.Is(err, errdef.ErrInvalidReference) || errors.Is(err, errdef.ErrInvalidDigest) ||
		errors.Is(err, errdef.ErrSizeExceedsLimit) {
		return Permanent(fmt.Errorf("%s: %w", ref, err))
	}
	if IsPermanent(err) {
		return err
	}
	return fmt.Errorf("%s: %w", ref, err)
}
