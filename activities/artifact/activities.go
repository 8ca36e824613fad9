// Package artifact runs the pipeline of the charts a context's apps name by reference, in
// EVE's stages: each source pinned to a digest (ResolveArtifacts), then fetched, verified
// against the digest (and, with a keyring, their Helm provenance) and stored by content
// (FetchArtifact), each app's stage recorded in
// the context's header; rendering then reads the stored bytes (activities/render).
package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/sources"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Activities run the artifact pipeline.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Blobs    *blobs.Store
	Keys     *seal.Keyring
	// Allow are the hosts charts may come from (nil: none).
	Allow *egress.Allow
	// Keyring is the path of the public GPG keyring every chart's provenance must be signed
	// with ("": charts are not asked for one).
	Keyring string
	// Events raises the charts that failed for good (nil: none).
	Events *feed.Emitter
}

// maxResolving bounds the sources one call resolves at once: a Helm repository's index
// is streamed (internal/adapters/sources), but each read holds a connection and a core.
const maxResolving = 4

// ResolveArtifacts pins the chart of every app of the context's composite app that names
// one by reference, and returns those the store does not have yet (to FetchArtifact), and
// whether the DIG pins its images. Pinned sources ask nobody; the others ask their
// registry or index, maxResolving apps at once.
func (a *Activities) ResolveArtifacts(ctx context.Context, in lifecycle.ContextRef) (lifecycle.ArtifactPlan, error) {
	var (
		plan lifecycle.ArtifactPlan
		apps []*store.Doc
		refs []reference
	)
	// The apps, and the DIG then its composite profile's app profiles: read at once.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		apps, err = a.Store.List(gctx, store.Query{Parent: in.Target.CompositeAppID(), Kind: model.KindApp})
		return err
	})
	g.Go(func() error {
		digDoc, err := a.Store.Get(gctx, in.Target.ID())
		if err != nil {
			return err
		}
		dig, err := model.Decode[model.DIGSpec](digDoc.Body)
		if err != nil {
			return err
		}
		plan.PinImages = dig.Spec.ImagePinning != nil && dig.Spec.ImagePinning.Enabled
		refs, err = a.profileReferences(gctx, in.Target.CompositeAppID()+"/composite-profiles/"+dig.Spec.CompositeProfile)
		return err
	})
	if err := g.Wait(); err != nil {
		return plan, err
	}
	var err error
	plan.Fetch, err = a.resolveAll(ctx, in, apps, refs)
	return plan, err
}

// resolveAll pins every app's chart reference and every profile's archive reference
// (refs), returning those to fetch.
func (a *Activities) resolveAll(ctx context.Context, in lifecycle.ContextRef, apps []*store.Doc, refs []reference) ([]artifact.Resolved, error) {
	for _, d := range apps {
		r, err := model.Decode[model.AppSpec](d.Body)
		if err != nil {
			return nil, err
		}
		if r.Spec.Chart != nil {
			refs = append(refs, reference{d.Name, *r.Spec.Chart})
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	creds, err := a.credentials(ctx, in.Target.Project)
	if err != nil {
		return nil, err
	}
	// A few at once, each Helm repository's index read once for all the charts asked of it.
	indexes := &sources.Indexes{}
	for _, ref := range refs {
		indexes.Want(ref.src)
	}
	out := make([]artifact.Resolved, len(refs))
	errs := make([]error, len(refs))
	var g errgroup.Group
	g.SetLimit(maxResolving)
	for i, ref := range refs {
		g.Go(func() error {
			out[i], errs[i] = a.resolve(ctx, in, ref.key, ref.src, creds, indexes)
			return nil
		})
	}
	_ = g.Wait() // errors are in errs
	if err := errors.Join(errs...); err != nil {
		return nil, failure(err)
	}
	var fetch []artifact.Resolved
	for _, r := range out {
		if r.Blob == "" || r.Size == 0 {
			fetch = append(fetch, r)
		}
	}
	return fetch, nil
}

// resolve pins one app's source and records its stage: Stored when the store has the
// bytes (Blob and Size set), else what FetchArtifact is to fetch.
func (a *Activities) resolve(ctx context.Context, in lifecycle.ContextRef, app string, src artifact.Source, creds credentials, indexes *sources.Indexes) (artifact.Resolved, error) {
	st := artifact.Status{App: app, Source: src.Location(), Transport: src.Transport(), Stage: artifact.StageResolving}
	c := sources.NewClient(ctx, a.Allow, creds.lookup, nil)
	c.Indexes = indexes
	defer c.Close()
	r, err := sources.Resolve(ctx, src, c)
	r.App, r.Project = app, in.Target.Project
	if err != nil {
		return r, a.failed(ctx, in, st, fmt.Errorf("%s %s: %w", describeKey(app), src.Location(), err))
	}
	st.Version, st.Digest = r.Version, r.Digest
	keyring, err := a.keyring(app)
	if err != nil {
		return r, err
	}
	e, ok, err := a.Blobs.Lookup(ctx, r.Digest)
	if err != nil {
		return r, err
	}
	if ok && trusted(keyring, e) && e.UsableBy(r.Project) {
		r.Blob, r.Size = e.Blob, e.Size
		st.Stage, st.Blob, st.Size, st.Cached, st.Signer = artifact.StageStored, e.Blob, e.Size, true, e.Signer
	} else {
		st.Stage = artifact.StageDownloading
	}
	return r, a.Contexts.SetArtifact(ctx, in.ContextID, st)
}

// FetchArtifact downloads one pinned artifact, verifies it against its digest (and, when
// the worker has a keyring, its provenance) and stores it by content, recording each stage
// (and the bytes received) in the context's header.
func (a *Activities) FetchArtifact(ctx context.Context, in lifecycle.FetchInput) error {
	r := in.Artifact
	st := artifact.Status{App: r.App, Source: r.Ref, Transport: r.Transport, Stage: artifact.StageDownloading,
		Version: r.Version, Digest: r.Digest}
	keyring, err := a.keyring(r.App)
	if err != nil {
		return err
	}
	if e, ok, err := a.Blobs.Lookup(ctx, r.Digest); err != nil {
		return err
	} else if ok && trusted(keyring, e) && e.UsableBy(r.Project) { // an earlier attempt, or another revision, stored it
		st.Stage, st.Blob, st.Size, st.Signer = artifact.StageStored, e.Blob, e.Size, e.Signer
		return a.Contexts.SetArtifact(ctx, in.ContextID, st)
	}
	creds, err := a.credentials(ctx, r.Project)
	if err != nil {
		return err
	}
	if err := a.Contexts.SetArtifact(ctx, in.ContextID, st); err != nil {
		return err
	}
	// Operations that start together download a digest once: the others wait for it.
	renew, release, err := a.Blobs.Claim(ctx, claimKey(r))
	if errors.Is(err, blobs.ErrFetching) {
		return a.awaitStored(ctx, in, st, keyring)
	}
	if err != nil {
		return err
	}
	defer release()
	p := progress{last: time.Now()}
	c := sources.NewClient(ctx, a.Allow, creds.lookup, func(n int64) {
		if p.received(ctx, a, in.ContextID, st, n) {
			renew(ctx)
		}
	})
	defer c.Close()
	data, blob, err := sources.Download(ctx, r, c)
	if err != nil {
		return failure(a.failed(ctx, in.ContextRef, st, fmt.Errorf("%s %s: %w", describeKey(r.App), r.Ref, err)))
	}
	st.Stage, st.Downloaded, st.Size = artifact.StageVerifying, int64(len(data)), int64(len(data))
	if err := a.Contexts.SetArtifact(ctx, in.ContextID, st); err != nil {
		return err
	}
	if r.Blob != "" && r.Blob != blob { // Download checked the source's digest; the blob's too
		return failure(a.failed(ctx, in.ContextRef, st, fmt.Errorf("%s %s: %w", describeKey(r.App), r.Ref,
			sources.Permanent(&sources.Mismatch{Ref: r.Ref, Want: r.Blob, Got: blob}))))
	}
	var sig sources.Signature
	if keyring != nil {
		if sig, err = a.verifyProvenance(ctx, r, creds, keyring, data); err != nil {
			return failure(a.failed(ctx, in.ContextRef, st, fmt.Errorf("%s %s: %w", describeKey(r.App), r.Ref, err)))
		}
	}
	if _, err := a.Blobs.PutSigned(ctx, data, r.Digest, sig.Signer, sig.Key); err != nil {
		return err
	}
	if err := a.Blobs.Grant(ctx, blob, r.Project); err != nil {
		return err
	}
	st.Stage, st.Blob, st.Signer = artifact.StageStored, blob, sig.Signer
	return a.Contexts.SetArtifact(ctx, in.ContextID, st)
}

// verifyProvenance fetches the provenance of the chart r pins (data) and checks it with
// keyring, returning who signed it: missing or invalid, or signed by a key not in the
// keyring, it fails permanently.
func (a *Activities) verifyProvenance(ctx context.Context, r artifact.Resolved, creds credentials, keyring *sources.Keyring, data []byte) (sources.Signature, error) {
	c := sources.NewClient(ctx, a.Allow, creds.lookup, nil)
	defer c.Close()
	prov, name, err := sources.DownloadProvenance(ctx, r, c)
	if err != nil {
		return sources.Signature{}, err
	}
	return keyring.Verify(name, data, prov)
}

// keyring is the worker's keyring, read afresh, for the artifact of key: nil when none is
// configured, or for a profile's archive (provenance is a chart's). One that cannot be read
// fails the attempt, to be retried once the file is mended.
func (a *Activities) keyring(key string) (*sources.Keyring, error) {
	if a.Keyring == "" || strings.HasPrefix(key, artifact.ProfileKey("")) {
		return nil, nil
	}
	return sources.LoadKeyring(a.Keyring)
}

// trusted reports whether a stored chart may be used without fetching it again: always
// without a keyring; with one, only if its provenance was verified when it was stored, by
// a key the keyring still holds (one stored unverified, or verified by a key since
// removed, is fetched and verified again).
func trusted(keyring *sources.Keyring, e blobs.Entry) bool {
	return keyring == nil || keyring.Has(e.SignerKey)
}

// awaitStored waits while another operation fetches the same digest (polling the store),
// then records it stored; the other's failure, or its claim going stale, fails this
// attempt for Temporal to retry (then this one may fetch).
func (a *Activities) awaitStored(ctx context.Context, in lifecycle.FetchInput, st artifact.Status, keyring *sources.Keyring) error {
	st.Error = "waiting for another operation fetching the same digest"
	_ = a.Contexts.SetArtifact(ctx, in.ContextID, st)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		e, ok, err := a.Blobs.Lookup(ctx, in.Artifact.Digest)
		if err != nil {
			return err
		}
		if ok && trusted(keyring, e) && e.UsableBy(in.Artifact.Project) {
			st.Stage, st.Blob, st.Size, st.Cached, st.Signer, st.Error = artifact.StageStored, e.Blob, e.Size, true, e.Signer, ""
			return a.Contexts.SetArtifact(ctx, in.ContextID, st)
		}
		if _, release, err := a.Blobs.Claim(ctx, claimKey(in.Artifact)); err == nil {
			release() // the other gave up or died: this attempt's retry fetches it
			return fmt.Errorf("app %q: %s: the other fetch of %s ended without storing it", in.Artifact.App, in.Artifact.Ref, in.Artifact.Digest)
		}
	}
	return fmt.Errorf("app %q: %s: still being fetched by another operation", in.Artifact.App, in.Artifact.Ref)
}

// claimKey is what a fetch claims: the digest for the project (another project's fetch
// would not serve it: Entry.UsableBy).
func claimKey(r artifact.Resolved) string { return r.Digest + "/" + r.Project }

// progress records the bytes a download received, at most every second; received says
// whether it did (the fetch's claim is renewed then too).
type progress struct {
	mu   sync.Mutex
	last time.Time
}

func (p *progress) received(ctx context.Context, a *Activities, ctxID string, st artifact.Status, n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < time.Second {
		return false
	}
	p.last = time.Now()
	st.Downloaded = n
	_ = a.Contexts.SetArtifact(ctx, ctxID, st) // progress only: the next write says more
	return true
}

// failed records why an app's artifact did not get through, and returns err: a
// permanent failure is the stage Failed; another is Retrying with the attempt and when
// the next comes.
func (a *Activities) failed(ctx context.Context, in lifecycle.ContextRef, st artifact.Status, err error) error {
	ctxID := in.ContextID
	st.Error = err.Error()
	if sources.IsPermanent(err) {
		st.Stage, st.Retrying = artifact.StageFailed, false
		if werr := a.Events.Emit(ctx, failedEvent(in, st)); werr != nil {
			return errors.Join(err, werr) // not final: retried, the event raised then
		}
	} else {
		attempt := activity.GetInfo(ctx).Attempt
		st.Retrying, st.Attempts, st.NextTry = true, attempt, lifecycle.NextAttempt(time.Now().UTC(), attempt)
	}
	if werr := a.Contexts.SetArtifact(ctx, ctxID, st); werr != nil && ctx.Err() == nil {
		return errors.Join(err, werr)
	}
	return err
}

// failedEvent tells that an app's chart failed for good: its digest or provenance did not
// verify, or it can never be fetched as named. Its id is the context's and the app's.
func failedEvent(in lifecycle.ContextRef, st artifact.Status) events.Event {
	e := events.Event{ID: events.ID(in.ContextID, events.ArtifactFailed, st.App), Type: events.ArtifactFailed,
		Details: map[string]any{"contextId": in.ContextID, "app": st.App, "source": st.Source, "digest": st.Digest, "error": st.Error}}
	e.About(in.Target.ID())
	e.Summary = fmt.Sprintf("the chart of app %q of %s failed verification: %s", st.App, e.Name(), st.Error)
	return e
}

// failure makes a permanent failure final for Temporal: the operation fails with it and
// nothing is rendered; any other is retried with the deploy workflows' backoff.
func failure(err error) error {
	if err != nil && sources.IsPermanent(err) {
		return temporal.NewNonRetryableApplicationError(err.Error(), lifecycle.ErrInvalidInput, nil)
	}
	return err
}

// credentials are a project's logins, by host.
type credentials map[string]sources.Credential

func (c credentials) lookup(host string) (sources.Credential, bool) {
	cr, ok := c[strings.ToLower(host)]
	return cr, ok
}

// credentials reads and opens the project's artifact credentials: only the project's own
// are ever sent, and only to the host each names.
func (a *Activities) credentials(ctx context.Context, project string) (credentials, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: "/projects/" + project, Kind: model.KindArtifactCredential, Full: true})
	if err != nil {
		return nil, err
	}
	out := credentials{}
	for _, d := range docs {
		r, err := model.Decode[model.ArtifactCredentialSpec](d.Body)
		if err != nil {
			return nil, err
		}
		var secret struct{ Password string }
		if len(d.Secret) > 0 {
			plain, err := a.Keys.Open(d.Secret, []byte(d.ID))
			if err != nil {
				return nil, fmt.Errorf("artifact credential %q: %w", d.Name, err)
			}
			if err := json.Unmarshal(plain, &secret); err != nil {
				return nil, err
			}
		}
		out[strings.ToLower(r.Spec.Host)] = sources.Credential{Username: r.Spec.Username, Password: secret.Password}
	}
	return out, nil
}
