// Package snapshot keeps whole-configuration snapshots of deployment intent groups: every
// resource a DIG's operation reads to build a revision, as canonical JSON, named by its
// content. An operation that produces a revision records it on the snapshot of the
// configuration it was accepted with (activities/operation), so an unchanged
// configuration keeps its snapshot and each snapshot lists the revisions it produced.
// Diff compares two snapshots resource by resource, field by field.
//
// What is in a snapshot (Build): the DIG itself, everything stored below it (placement
// intents and their app intents, the intents resource, every controller's intents,
// rollout strategies, capacity placements, policy intents), the composite app version
// with its apps and their dependencies, the DIG's composite profile with its profiles,
// and its logical cloud with its cluster references. Of each, its kind, metadata and
// spec; an archive stored with it (a chart, a profile, a controller's files) by its
// sha256 alone, and what is stored sealed (templates and files that may hold Secrets)
// by the sha256 of the sealed bytes, never the plain ones. Lifecycle histories, owners
// and timestamps are not configuration and are left out.
package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Document is a snapshot's content: the DIG's store id and its configuration, each
// resource under its store id (its REST path below /v2).
type Document struct {
	DIG       string              `json:"dig"`
	Resources map[string]Resource `json:"resources"`
}

// Resource is one resource of a configuration.
type Resource struct {
	Kind     string          `json:"kind"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Spec     json.RawMessage `json:"spec,omitempty"`
	// Body is a stored body that is not JSON (never written by temco; kept rather than
	// lost).
	Body string `json:"body,omitempty"`
	// Blob is the sha256 ("sha256:<hex>") of the archive stored with the resource: a
	// chart, a profile, a controller's files.
	Blob string `json:"blob,omitempty"`
	// Sealed is the sha256 of what is stored sealed with it (a controller's templates and
	// files, which may hold Secrets): of the sealed bytes, so that nothing about the plain
	// ones can be checked against it. Sending the same file again seals it anew.
	Sealed string `json:"sealed,omitempty"`
}

// Build reads the configuration of the DIG whose store id is dig. Resources the DIG
// names that do not exist (yet) are left out: the DIG's spec names them.
func Build(ctx context.Context, st *store.Store, dig string) (Document, error) {
	t := lifecycle.DIGOfID(dig)
	if t.DIG == "" || t.ID() != dig {
		return Document{}, fmt.Errorf("snapshot of %s: not a deployment intent group", dig)
	}
	doc := Document{DIG: dig, Resources: map[string]Resource{}}
	d, err := st.Get(ctx, dig)
	if err != nil {
		return Document{}, err
	}
	doc.add(d)
	spec, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil {
		return Document{}, fmt.Errorf("snapshot of %s: %w", dig, err)
	}
	ca := fmt.Sprintf("/projects/%s/composite-apps/%s/%s", t.Project, t.CompositeApp, t.Version)
	whole := []string{dig, ca + "/apps"} // and everything below
	single := []string{ca}
	if spec.Spec.CompositeProfile != "" {
		profile := ca + "/composite-profiles/" + spec.Spec.CompositeProfile
		whole, single = append(whole, profile), append(single, profile)
	}
	// The reads are independent round trips: made at once (an operation waits for them).
	var mu sync.Mutex
	add := func(docs ...*store.Doc) {
		mu.Lock()
		defer mu.Unlock()
		doc.add(docs...)
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, prefix := range whole {
		g.Go(func() error {
			docs, err := st.Subtree(gctx, prefix)
			add(docs...)
			return err
		})
	}
	if spec.Spec.LogicalCloud != "" {
		cloud := lifecycle.LogicalCloudID(t.Project, spec.Spec.LogicalCloud)
		single = append(single, cloud)
		g.Go(func() error {
			refs, err := st.ListCurrent(gctx, store.Query{Parent: cloud, Kind: model.KindClusterReference})
			add(refs...)
			return err
		})
	}
	for _, id := range single {
		g.Go(func() error {
			d, err := st.Get(gctx, id)
			if store.CodeOf(err) == store.ErrNotFound {
				return nil
			}
			if err == nil {
				add(d)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return Document{}, err
	}
	return doc, nil
}

func (doc Document) add(docs ...*store.Doc) {
	for _, d := range docs {
		doc.Resources[d.ID] = resourceOf(d)
	}
}

// resourceOf keeps what is configuration of a stored resource: its kind, metadata and
// spec, and digests of its blob and sealed data.
func resourceOf(d *store.Doc) Resource {
	r := Resource{Kind: d.Kind, Blob: digest(d.Blob), Sealed: digest(d.Secret)}
	var body struct {
		Metadata json.RawMessage `json:"metadata"`
		Spec     json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal([]byte(d.Body), &body); err != nil {
		r.Body = d.Body
		return r
	}
	r.Metadata, r.Spec = body.Metadata, body.Spec
	return r
}

func digest(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Parse reads a snapshot's canonical JSON.
func Parse(data []byte) (Document, error) {
	var doc Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return Document{}, fmt.Errorf("read snapshot: %w", err)
	}
	if doc.Resources == nil {
		doc.Resources = map[string]Resource{}
	}
	return doc, nil
}
