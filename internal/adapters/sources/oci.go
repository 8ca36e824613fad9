package sources

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/temco/temco/internal/core/artifact"
)

// ociTransport: a chart in an OCI registry, with Helm's own registry client, pinned by
// its manifest's digest.
type ociTransport struct{}

// noCredentialsFile is where Helm's client would look for stored logins: nowhere, so that
// the worker's own (or its user's Docker) credentials are never sent for a project.
var noCredentialsFile = filepath.Join(os.TempDir(), "temco-no-registry-credentials", "config.json")

func (ociTransport) client(c *Client, host string, plainHTTP bool) (*registry.Client, error) {
	authorizer := auth.Client{Client: c.HTTP, Credential: func(_ context.Context, h string) (auth.Credential, error) {
		if cr, ok := c.credential(h); ok {
			return auth.Credential{Username: cr.Username, Password: cr.Password}, nil
		}
		return auth.EmptyCredential, nil
	}}
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(c.HTTP), registry.ClientOptAuthorizer(authorizer),
		registry.ClientOptCredentialsFile(noCredentialsFile)}
	if plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	return registry.NewClient(opts...)
}

func (t ociTransport) Resolve(_ context.Context, src artifact.Source, c *Client) (artifact.Resolved, error) {
	repo := strings.TrimPrefix(src.OCI, "oci://")
	r := artifact.Resolved{Version: src.Version, PlainHTTP: src.PlainHTTP}
	rc, err := t.client(c, src.Host(), src.PlainHTTP)
	if err != nil {
		return r, Permanent(err)
	}
	// Pinned, the tag is not asked for; the digest is, so that a chart the registry does
	// not have (or the project may not read) fails here, before anything else.
	ref := repo + "@" + src.Digest
	if src.Digest == "" {
		ref = repo + ":" + strings.ReplaceAll(src.Version, "+", "_") // Helm's tags: '+' is '_'
	}
	desc, err := rc.Resolve(ref)
	if err != nil {
		return r, ociFailure(ref, err)
	}
	r.Ref, r.Digest = repo+"@"+desc.Digest.String(), desc.Digest.String()
	return r, nil
}

func (t ociTransport) Download(_ context.Context, r artifact.Resolved, c *Client) ([]byte, error) {
	host, _, _ := strings.Cut(r.Ref, "/")
	rc, err := t.client(c, host, r.PlainHTTP)
	if err != nil {
		return nil, Permanent(err)
	}
	res, err := rc.Pull(r.Ref)
	if err != nil {
		return nil, ociFailure(r.Ref, err)
	}
	if res.Manifest.Digest != r.Digest {
		return nil, Permanent(&Mismatch{Ref: r.Ref, Want: r.Digest, Got: res.Manifest.Digest})
	}
	if int64(len(res.Chart.Data)) > artifact.MaxSize {
		return nil, Permanent(fmt.Errorf("%s: chart of %d bytes is over the %d allowed", r.Ref, len(res.Chart.Data), artifact.MaxSize))
	}
	return res.Chart.Data, nil
}

// Provenance is the manifest's provenance layer (Helm pushes the .prov beside the chart
// as one); the archive's file name is <chart>-<version>.tgz, as `helm package` names it.
func (t ociTransport) Provenance(_ context.Context, r artifact.Resolved, c *Client) ([]byte, string, error) {
	host, _, _ := strings.Cut(r.Ref, "/")
	rc, err := t.client(c, host, r.PlainHTTP)
	if err != nil {
		return nil, "", Permanent(err)
	}
	res, err := rc.Pull(r.Ref, registry.PullOptWithChart(false), registry.PullOptWithProv(true), registry.PullOptIgnoreMissingProv(true))
	if err != nil {
		return nil, "", ociFailure(r.Ref, err)
	}
	if res.Manifest.Digest != r.Digest {
		return nil, "", Permanent(&Mismatch{Ref: r.Ref, Want: r.Digest, Got: res.Manifest.Digest})
	}
	if res.Prov == nil || len(res.Prov.Data) == 0 {
		return nil, "", Permanent(fmt.Errorf("%s: the manifest has no layer of type %s", r.Ref, registry.ProvLayerMediaType))
	}
	if int64(len(res.Prov.Data)) > artifact.MaxSize {
		return nil, "", Permanent(fmt.Errorf("%s: provenance of %d bytes is over the %d allowed", r.Ref, len(res.Prov.Data), artifact.MaxSize))
	}
	name := ""
	if m := res.Chart.Meta; m != nil {
		name = m.Name + "-" + m.Version + ".tgz"
	}
	return res.Prov.Data, name, nil
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
	if errors.Is(err, errdef.ErrNotFound) || errors.Is(err, errdef.ErrInvalidReference) || errors.Is(err, errdef.ErrInvalidDigest) {
		return Permanent(fmt.Errorf("%s: %w", ref, err))
	}
	if IsPermanent(err) {
		return err
	}
	return fmt.Errorf("%s: %w", ref, err)
}
