// The clusters' OpenAPI schemas: an object's fields its cluster does not declare are
// dropped before the server-side apply, which would refuse the whole object (see kubeschema).

package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"

	"github.com/temco/temco/internal/adapters/kubeschema"
	"github.com/temco/temco/internal/core/appctx"
)

// schemaIndex is where one API server publishes the schema of each group-version: its
// /openapi/v3 index, read once and again after a CRD changed what it serves.
type schemaIndex struct {
	client openapi.Client
	mu     sync.Mutex
	paths  map[string]openapi.GroupVersion // "apis/apps/v1" -> its document (URL with the content's hash)
	read   time.Time
}

func newSchemaIndex(rc rest.Interface) *schemaIndex {
	return &schemaIndex{client: openapi.NewClient(rc)}
}

// indexFresh bounds how often a group-version the index lacks makes it read again: a CRD's
// schema is published a moment after the CRD is established.
const indexFresh = time.Second

// lookup returns the document of a group-version (nil: the server publishes none, as
// servers before OpenAPI v3 or for a kind no CRD defines yet).
func (x *schemaIndex) lookup(ctx context.Context, path string) (openapi.GroupVersion, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if gv, ok := x.paths[path]; ok {
		return gv, nil
	}
	if x.paths != nil && time.Since(x.read) < indexFresh {
		return nil, nil
	}
	paths, err := openapi.ToClientWithContext(x.client).PathsWithContext(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) { // no OpenAPI v3, or not for these credentials
			x.paths, x.read = map[string]openapi.GroupVersion{}, time.Now()
			return nil, nil
		}
		return nil, fmt.Errorf("read the cluster's OpenAPI index: %w", err)
	}
	x.paths, x.read = make(map[string]openapi.GroupVersion, len(paths)), time.Now()
	for k, v := range paths {
		x.paths[k] = v.(openapi.GroupVersion)
	}
	return x.paths[path], nil
}

// forget makes the next lookup read the index again (a CRD was applied).
func (x *schemaIndex) forget() {
	x.mu.Lock()
	x.paths = nil
	x.mu.Unlock()
}

// Schemas holds the parsed schema documents of every cluster a worker reaches, by URL:
// the URL carries a hash of the document, so clusters that publish the same schema (the
// same Kubernetes version and CRDs) share one parse, and so do their pruned objects.
type Schemas struct {
	// loads makes the clusters that miss the same document at once (a cold worker's
	// first batch) wait for one load and parse of it, not each do its own: a hundred
	// parses of a megabyte's schema at once took a gigabyte and seconds of CPU.
	loads  singleflight.Group
	mu     sync.Mutex
	docs   map[string]*kubeschema.Schema
	order  []string // oldest first: the first to go when the cache is full
	pruned map[string]prunedObject
}

// prunedObject is an object as applied under one schema: Body nil when nothing was dropped.
type prunedObject struct {
	Body    []byte
	Dropped []string
	Schema  string // the document that described the kind ("": none did)
}

// Bounds of the caches: a fleet has few distinct schemas, and a DIG few distinct objects.
const (
	maxSchemas = 256
	maxPruned  = 20000
)

// doc returns the parsed schema document key names, loading it on a miss.
func (s *Schemas) doc(key string, load func() ([]byte, error)) (*kubeschema.Schema, error) {
	s.mu.Lock()
	d := s.docs[key]
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	v, err, _ := s.loads.Do(key, func() (any, error) { return s.load(key, load) })
	if err != nil {
		return nil, err
	}
	return v.(*kubeschema.Schema), nil
}

// load loads, parses and caches the schema document key names, unless a load that ended
// since the caller's miss has.
func (s *Schemas) load(key string, load func() ([]byte, error)) (*kubeschema.Schema, error) {
	s.mu.Lock()
	d := s.docs[key]
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	raw, err := load()
	if err != nil {
		return nil, err
	}
	if d, err = kubeschema.Parse(raw); err != nil {
		return nil, fmt.Errorf("the cluster's OpenAPI schema %s: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.docs == nil {
		s.docs = map[string]*kubeschema.Schema{}
	}
	if _, ok := s.docs[key]; !ok {
		if len(s.order) == maxSchemas {
			delete(s.docs, s.order[0])
			s.order = s.order[1:]
		}
		s.docs[key] = d
		s.order = append(s.order, key)
	}
	return d, nil
}

// prune returns obj as it may be applied under the schema document key names (loaded
// with load on a miss): without the fields it does not declare.
func (s *Schemas) prune(key string, obj *appctx.Object, load func() ([]byte, error)) (prunedObject, error) {
	memo := key + "|" + obj.Hash
	s.mu.Lock()
	p, ok := s.pruned[memo]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	d, err := s.doc(key, load)
	if err != nil {
		return prunedObject{}, err
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(obj.Manifest), &m); err != nil {
		return prunedObject{}, permanentErr{fmt.Errorf("%s: the stored manifest is not JSON: %v", obj.Ref, err)}
	}
	gvk := schema.GroupVersionKind{Group: obj.Group, Version: obj.Version, Kind: obj.Kind}
	if d.Knows(gvk) {
		p.Schema = key
	}
	if p.Dropped = d.Prune(gvk, m); p.Dropped != nil {
		if p.Body, err = json.Marshal(m); err != nil {
			return prunedObject{}, err
		}
	}
	s.mu.Lock()
	if s.pruned == nil || len(s.pruned) >= maxPruned {
		s.pruned = map[string]prunedObject{}
	}
	s.pruned[memo] = p
	s.mu.Unlock()
	return p, nil
}

// prune returns obj as it may be applied on the cluster: without the fields the cluster's
// schema does not declare (Body nil when there are none, or no schema describes the kind).
func (c *client) prune(ctx context.Context, obj *appctx.Object) (prunedObject, error) {
	gv, err := c.schemas.lookup(ctx, groupVersionPath(obj.Group, obj.Version))
	if err != nil || gv == nil {
		return prunedObject{}, err
	}
	url := gv.ServerRelativeURL()
	return c.shared.prune(url, obj, func() ([]byte, error) {
		raw, err := openapi.ToGroupVersionWithContext(gv).SchemaWithContext(ctx, "application/json")
		if err != nil {
			return nil, fmt.Errorf("read the cluster's OpenAPI schema %s: %w", url, err)
		}
		return raw, nil
	})
}

// awaitSchema prunes obj with a schema of its kind other than the one p was pruned with,
// after the API server refused it: false when there is none.
//
// The server checks a custom object against its definition from the moment the definition
// is established, but publishes that schema in its OpenAPI later: seconds later on a busy
// server, never on one without OpenAPI v3 (before Kubernetes 1.27). So the definition
// itself is asked first; only when it cannot be read (credentials limited to a namespace,
// a kind no CRD defines) is the OpenAPI looked at again: a newer document, or, when there
// was none, one published within a few seconds.
func (c *client) awaitSchema(ctx context.Context, obj *appctx.Object, m mapped, p prunedObject) (prunedObject, bool) {
	if q, err := c.pruneByDefinition(ctx, obj, m); err == nil {
		// A definition that declares every field: the refusal is the object's own.
		return q, len(q.Dropped) > 0
	}
	for deadline := time.Now().Add(unservedGrace); time.Now().Before(deadline); {
		c.schemas.forget()
		if q, err := c.prune(ctx, obj); err == nil && q.Schema != "" && q.Schema != p.Schema {
			return q, true
		}
		if p.Schema != "" || sleep(ctx, unservedGrace/10) != nil {
			break // the schema the object was pruned with is the current one: the refusal is the object's
		}
	}
	return p, false
}

// pruneByDefinition prunes obj, a custom object mapped to m, with the schema of its
// CustomResourceDefinition as the cluster holds it.
func (c *client) pruneByDefinition(ctx context.Context, obj *appctx.Object, m mapped) (prunedObject, error) {
	raw, err := c.rest.Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", m.gvr.Resource+"."+m.gvr.Group).
		Do(ctx).Raw()
	if err != nil {
		return prunedObject{}, err
	}
	var crd map[string]any
	if err := json.Unmarshal(raw, &crd); err != nil {
		return prunedObject{}, err
	}
	doc, err := kubeschema.CRDDocument(crd)
	if err != nil {
		return prunedObject{}, err
	}
	sum := sha256.Sum256(doc)
	return c.shared.prune("crd:"+hex.EncodeToString(sum[:]), obj, func() ([]byte, error) { return doc, nil })
}

// groupVersionPath is a group-version's key in the OpenAPI v3 index.
func groupVersionPath(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

// schemaRefused tells the API server's refusal of an object its typed conversion cannot
// take (an undeclared field, a value of the wrong type): a 500 that no retry mends.
func schemaRefused(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	msg := st.Status().Message
	return strings.Contains(msg, "failed to create typed patch object") || strings.Contains(msg, "failed to create typed live object")
}

// dropWarning is the status warning of an object applied without some of its fields.
func dropWarning(dropped []string) string {
	if len(dropped) == 0 {
		return ""
	}
	return "applied without fields the cluster's schema does not declare (as a create drops them): " + strings.Join(dropped, ", ")
}
