// Secrets at rest: a context's Secret objects, and the controllers' edits that add or patch
// one, are stored sealed with the store's keys and opened as they are read, so that
// nothing above the Store sees the difference.

package appctx

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/seal"
)

// Option configures a Store.
type Option func(*Store)

// WithKeys seals the Secrets of every context written with keys, and opens with them the
// ones read. Without it (tests that hold no keys) everything is stored in clear; a sealed
// object then cannot be read.
func WithKeys(keys *seal.Keyring) Option { return func(s *Store) { s.keys = keys } }

// IsSecret tells the kinds whose objects are sealed: Secret, in any case (as EMCO compares
// kinds) and any group — sealing a kind that holds nothing secret costs only a few
// microseconds.
func IsSecret(kind string) bool { return strings.EqualFold(kind, "Secret") }

// site is where a sealed object is stored: its context, its app, and the cluster whose own
// objects hold it ("" for the app's objects, base and variants).
type site struct{ ctx, app, cluster string }

// aad binds a sealed object to its site and identity: a sealed value copied to another
// context, app, cluster or object does not open. Resource ids (api.SetSealed) begin with
// "/", so they never read as one of these.
func (p site) aad(r Ref) []byte {
	return []byte(strings.Join([]string{"appctx/object", p.ctx, p.app, p.cluster, r.Group, r.Version, r.Kind, r.Namespace, r.Name}, "\x00"))
}

// sealObjects returns objs as they are stored: a copy with each Secret's manifest sealed,
// its hash left out (a hash of a manifest would let a guessed password be checked
// offline). objs is left as it is: callers go on using it.
func (s *Store) sealObjects(p site, objs []Object) ([]Object, error) {
	if s.keys == nil || !hasSecret(objs) {
		return objs, nil
	}
	out := slices.Clone(objs)
	for i, o := range objs {
		if !IsSecret(o.Kind) {
			continue
		}
		sealed, err := s.keys.Seal([]byte(o.Manifest), p.aad(o.Ref))
		if err != nil {
			return nil, fmt.Errorf("seal %s of app %s in context %s: %w", o.Ref, p.app, p.ctx, err)
		}
		out[i] = Object{Ref: o.Ref, Sealed: sealed}
	}
	return out, nil
}

func hasSecret(objs []Object) bool {
	return slices.ContainsFunc(objs, func(o Object) bool { return IsSecret(o.Kind) })
}

// openObjects opens, in place, the sealed objects of objs as read. An object stored in clear
// (before sealing, or by a store without keys) is left as it is.
func (s *Store) openObjects(p site, objs []Object) error {
	for i := range objs {
		o := &objs[i]
		if o.Sealed == nil {
			continue
		}
		if s.keys == nil {
			return fmt.Errorf("%s of app %s in context %s is sealed and no key is configured to open it", o.Ref, p.app, p.ctx)
		}
		plain, err := s.keys.Open(o.Sealed, p.aad(o.Ref))
		if err != nil {
			return fmt.Errorf("open %s of app %s in context %s: %w", o.Ref, p.app, p.ctx, err)
		}
		sum := sha256.Sum256(plain) // Hash is the sha256 of Manifest (NewObject)
		o.Manifest, o.Hash, o.Sealed = string(plain), hex.EncodeToString(sum[:]), nil
	}
	return nil
}

// sealApp returns the stored form of a rendered app: a copy when it has Secrets.
func (s *Store) sealApp(ctxID string, a *App) (*App, error) {
	p := site{ctx: ctxID, app: a.Name}
	objs, err := s.sealObjects(p, a.Objects)
	if err != nil {
		return nil, err
	}
	base, err := s.sealObjects(p, a.Base)
	if err != nil {
		return nil, err
	}
	variants, err := s.sealVariants(ctxID, a.Name, a.Variants)
	if err != nil {
		return nil, err
	}
	c := *a
	c.Objects, c.Base, c.Variants = objs, base, variants
	return &c, nil
}

// sealVariants returns the stored form of an app's variants: a copy when one has Secrets.
func (s *Store) sealVariants(ctxID, app string, variants map[string][]Object) (map[string][]Object, error) {
	if s.keys == nil || !slices.ContainsFunc(slices.Collect(maps.Values(variants)), hasSecret) {
		return variants, nil
	}
	out := make(map[string][]Object, len(variants))
	for key, objs := range variants {
		var err error
		if out[key], err = s.sealObjects(site{ctx: ctxID, app: app}, objs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openApp opens the sealed objects of an app as read from where context ctxID keeps its
// app name (not where the document says it belongs: a document copied elsewhere whole
// must not open).
func (s *Store) openApp(ctxID, name string, a *App) error {
	p := site{ctx: ctxID, app: name}
	if err := s.openObjects(p, a.Objects); err != nil {
		return err
	}
	if err := s.openObjects(p, a.Base); err != nil {
		return err
	}
	for _, objs := range a.Variants {
		if err := s.openObjects(p, objs); err != nil {
			return err
		}
	}
	return nil
}

// sealPlaced returns the stored form of the apps placed on one cluster: copies of those
// whose own objects have Secrets.
func (s *Store) sealPlaced(ctxID, cluster string, apps []*ClusterApp) ([]*ClusterApp, error) {
	if s.keys == nil || !slices.ContainsFunc(apps, func(a *ClusterApp) bool { return hasSecret(a.Objects) }) {
		return apps, nil
	}
	out := slices.Clone(apps)
	for i, a := range apps {
		if !hasSecret(a.Objects) {
			continue
		}
		objs, err := s.sealObjects(site{ctx: ctxID, app: a.App, cluster: cluster}, a.Objects)
		if err != nil {
			return nil, err
		}
		c := *a
		c.Objects = objs
		out[i] = &c
	}
	return out, nil
}

// opened gives the apps of a cluster document of context ctxID, as read, what they take
// from it (attach), and opens their sealed objects, bound to the document's _id.
func (s *Store) opened(ctxID string, d *clusterDoc) error {
	d.attach()
	cluster := strings.TrimPrefix(d.ID, ctxID+"/")
	for _, a := range d.Apps {
		if err := s.openObjects(site{ctx: ctxID, app: a.App, cluster: cluster}, a.Objects); err != nil {
			return err
		}
	}
	return nil
}

// touchesSecret tells the edits that add a Secret or patch one (kinds compared as EMCO
// does, in any case). A manifest that does not parse is taken for one: the check that
// refuses it comes later.
func touchesSecret(e contract.Edit) bool {
	switch e.Op {
	case contract.EditPatch:
		return IsSecret(e.Kind)
	case contract.EditAddResource:
		var m struct {
			Kind string `json:"kind"`
		}
		return json.Unmarshal(e.Data, &m) != nil || IsSecret(m.Kind)
	}
	return false
}

// layerAAD binds a sealed layer to its context and step (its id).
func layerAAD(ctxID string, step int) []byte {
	return fmt.Appendf(nil, "appctx/edits\x00%s\x00%d", ctxID, step)
}

// sealLayer returns the stored form of a layer whose Raw is set: sealed whole when one of
// its edits adds or patches a Secret.
func (s *Store) sealLayer(l *Layer) (*Layer, error) {
	if s.keys == nil || !slices.ContainsFunc(l.Edits, touchesSecret) {
		return l, nil
	}
	sealed, err := s.keys.Seal([]byte(l.Raw), layerAAD(l.Context, l.Step))
	if err != nil {
		return nil, fmt.Errorf("seal the edits of %s: %w", l.ID, err)
	}
	c := *l
	c.Raw, c.Sealed = "", sealed
	return &c, nil
}

// openLayer sets the Raw of a sealed layer of context ctxID as read.
func (s *Store) openLayer(ctxID string, l *Layer) error {
	if l.Sealed == nil {
		return nil
	}
	if s.keys == nil {
		return fmt.Errorf("the edits of %s are sealed and no key is configured to open them", l.ID)
	}
	raw, err := s.keys.Open(l.Sealed, layerAAD(ctxID, l.Step))
	if err != nil {
		return fmt.Errorf("open the edits of %s: %w", l.ID, err)
	}
	l.Raw, l.Sealed = string(raw), nil
	return nil
}
