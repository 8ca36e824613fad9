package sources

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/repo"

	"github.com/temco/temco/internal/core/artifact"
)

// helmRepoTransport: a chart in a Helm repository, pinned by its index.yaml entry's digest.
type helmRepoTransport struct{}

func (helmRepoTransport) Resolve(ctx context.Context, src artifact.Source, c *Client) (artifact.Resolved, error) {
	base := strings.TrimSuffix(src.HelmRepo, "/")
	u, err := url.Parse(base)
	if err != nil {
		return artifact.Resolved{}, Permanent(err)
	}
	versions, err := c.Indexes.versions(ctx, c, base, u.Host, src.Chart)
	if err != nil {
		return artifact.Resolved{}, err
	}
	idx := repo.IndexFile{Entries: map[string]repo.ChartVersions{src.Chart: versions}}
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

// readIndex reads the versions of charts from the repository at base, each chart's
// newest first.
func readIndex(ctx context.Context, c *Client, base, host string, charts map[string]bool) (map[string]repo.ChartVersions, error) {
	body, err := open(ctx, c, base+"/index.yaml", host)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	r := &readErr{r: body}
	entries, err := indexEntries(r, charts)
	switch {
	case r.err != nil && r.err != io.EOF:
		return nil, fmt.Errorf("GET %s/index.yaml: %w", base, r.err)
	case err != nil:
		return nil, Permanent(fmt.Errorf("%s/index.yaml: %v", base, err))
	}
	repo.IndexFile{Entries: entries}.SortEntries()
	return entries, nil
}

// readErr remembers a read's error: the connection's failing, not the index's.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// Indexes read each Helm repository's index once for all the charts asked of it: the
// charts declared (Want) before its first read are all read from it in one pass. One
// Indexes serves one project's resolutions (its credentials) for the time of one call.
type Indexes struct {
	mu    sync.Mutex
	repos map[string]*indexRead // by base URL
}

// indexRead is one read of a repository's index, shared by the resolutions waiting on it.
type indexRead struct {
	charts  map[string]bool
	started bool
	done    chan struct{}
	entries map[string]repo.ChartVersions
	err     error
}

// Want declares that src's chart will be asked for: it is read with the others of its
// repository.
func (ix *Indexes) Want(src artifact.Source) {
	if src.Transport() != artifact.TransportHelm {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if r := ix.read(strings.TrimSuffix(src.HelmRepo, "/")); !r.started {
		r.charts[src.Chart] = true
	}
}

func (ix *Indexes) read(base string) *indexRead {
	if ix.repos == nil {
		ix.repos = map[string]*indexRead{}
	}
	r, ok := ix.repos[base]
	if !ok {
		r = &indexRead{charts: map[string]bool{}, done: make(chan struct{})}
		ix.repos[base] = r
	}
	return r
}

// versions are chart's versions in the repository at base: read with the other charts
// declared, or alone when ix is nil or the chart was not declared before the read began.
func (ix *Indexes) versions(ctx context.Context, c *Client, base, host, chart string) (repo.ChartVersions, error) {
	alone := func() (repo.ChartVersions, error) {
		entries, err := readIndex(ctx, c, base, host, map[string]bool{chart: true})
		return entries[chart], err
	}
	if ix == nil {
		return alone()
	}
	ix.mu.Lock()
	r := ix.read(base)
	switch {
	case !r.started:
		r.charts[chart], r.started = true, true
		ix.mu.Unlock()
		r.entries, r.err = readIndex(ctx, c, base, host, r.charts)
		close(r.done)
	case !r.charts[chart]:
		ix.mu.Unlock()
		return alone()
	default:
		ix.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.entries[chart], r.err
}
