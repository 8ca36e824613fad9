// Package work holds the sync of a cluster inventory (features/inventory/flow): it reads the
// hub's ClusterProfiles, keeps the provider's clusters registered from them in step
// (credentials from the Secret each profile's access provider names, labels from its labels
// and properties; out of placements, by label, when unhealthy or gone), and writes every
// DIG's clusters of the inventory as PlacementDecisions on the hub.
package work

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	"github.com/temco/temco/features/inventory/flow"
	"github.com/temco/temco/internal/adapters/kubeconfig"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	core "github.com/temco/temco/internal/core/inventory"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Activities sync cluster inventories.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Keys     *seal.Keyring
}

// FieldInventory marks a cluster registered from an inventory's profile (its value: the
// inventory's name); a cluster without it is never touched by a sync.
const FieldInventory = "inventory"

// fieldManager owns the PlacementDecisions temco writes (server-side apply).
const fieldManager = "temco"

var (
	profiles  = v1alpha1.GroupVersion.WithResource("clusterprofiles")
	decisions = v1alpha1.GroupVersion.WithResource("placementdecisions")
)

// hub is the inventory's hub as the sync reaches it.
type hub struct {
	dyn  dynamic.Interface
	core kubernetes.Interface
	ns   string
}

// SyncInventory is one sync; a hub that cannot be read is in the status, not an error
// (the next sync tries again).
func (a *Activities) SyncInventory(ctx context.Context, in flow.InventoryInput) (flow.InventorySynced, error) {
	doc, err := a.Store.Get(ctx, in.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return flow.InventorySynced{Gone: true}, nil
	}
	if err != nil {
		return flow.InventorySynced{}, err
	}
	r, err := model.Decode[core.Spec](doc.Body)
	if err != nil {
		return flow.InventorySynced{}, temporal.NewNonRetryableApplicationError(err.Error(), lifecycle.ErrInvalidInput, nil)
	}
	spec := r.Spec.WithDefaults()
	out := flow.InventorySynced{Interval: time.Duration(spec.SyncInterval)}
	status := flow.InventoryStatus{Synced: time.Now().UTC(), Profiles: []flow.ProfileStatus{}, Decisions: []flow.DecisionStatus{}}
	h, err := a.hubOf(doc, spec.Namespace)
	if err == nil {
		err = a.sync(ctx, in, spec, h, &status)
	}
	var hubErr *hubError
	switch {
	case errors.As(err, &hubErr):
		status.Error = hubErr.Error()
		out.Summary = status.Error
	case err != nil:
		return out, err
	default:
		out.Summary = summary(status)
	}
	for _, e := range status.Evictions { // found before any write to the hub
		if t := lifecycle.DIGOfID(e.DIG); e.Action == flow.EvictionUpdate && !slices.Contains(out.Evict, t) {
			out.Evict = append(out.Evict, t)
		}
	}
	return out, a.record(ctx, in.ID(), status)
}

// hubError is a failure to read or write the hub (the status says it; no retry).
type hubError struct{ err error }

func (e *hubError) Error() string { return "the hub: " + e.err.Error() }

func (a *Activities) hubOf(doc *store.Doc, ns string) (*hub, error) {
	raw, err := a.Keys.Open(doc.Secret, []byte(doc.ID))
	if err != nil {
		return nil, &hubError{errors.New("its stored kubeconfig cannot be decrypted with the configured keys")}
	}
	p, err := kubeconfig.Parse(raw)
	if err != nil {
		return nil, &hubError{err}
	}
	cfg := *p.Config
	cfg.Timeout = 30 * time.Second
	dyn, err := dynamic.NewForConfig(&cfg)
	if err != nil {
		return nil, &hubError{err}
	}
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return nil, &hubError{err}
	}
	return &hub{dyn: dyn, core: cs, ns: ns}, nil
}

// sync reconciles the clusters with the profiles, then the decisions with the DIGs.
func (a *Activities) sync(ctx context.Context, in flow.InventoryInput, spec core.Spec, h *hub, status *flow.InventoryStatus) error {
	list, err := h.dyn.Resource(profiles).Namespace(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return &hubError{fmt.Errorf("list ClusterProfiles in namespace %q: %w", h.ns, err)}
	}
	providerID := "/cluster-providers/" + in.Provider
	// The provider's clusters (names taken), and the inventory's own with their kubeconfigs.
	clusters, err := a.Store.List(ctx, store.Query{Parent: providerID, Kind: model.KindCluster})
	if err != nil {
		return err
	}
	mine, err := a.Store.List(ctx, store.Query{Parent: providerID, Kind: model.KindCluster, Fields: map[string]string{FieldInventory: in.Name}, Full: true})
	if err != nil {
		return err
	}
	byName := map[string]*store.Doc{}
	for _, c := range slices.Concat(clusters, mine) {
		byName[c.Name] = c
	}
	// Every label of the provider's clusters in one read, not one per cluster.
	labelDocs, err := a.Store.List(ctx, store.Query{Scope: providerID, Kind: model.KindClusterLabel})
	if err != nil {
		return err
	}
	labels := labelIndex{}
	for _, l := range labelDocs {
		labels[l.Parent] = append(labels[l.Parent], l)
	}
	seen := map[string]bool{}
	var placeable []string // clusters whose profile exists: a decision may name them
	items := list.Items
	slices.SortFunc(items, func(x, y unstructured.Unstructured) int { return strings.Compare(x.GetName(), y.GetName()) })
	for _, item := range items {
		var p v1alpha1.ClusterProfile
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &p); err != nil {
			status.Profiles = append(status.Profiles, flow.ProfileStatus{Profile: item.GetName(), State: flow.ProfileSkipped,
				Reason: "not a ClusterProfile temco can read: " + err.Error()})
			continue
		}
		if spec.ClusterManager != "" && p.Labels[v1alpha1.LabelClusterManagerKey] != spec.ClusterManager {
			continue
		}
		ps, err := a.profile(ctx, in, h, &p, byName[p.Name], labels)
		if err != nil {
			return err
		}
		if ps.State != flow.ProfileSkipped {
			seen[p.Name] = true
			placeable = append(placeable, p.Name)
		}
		status.Profiles = append(status.Profiles, ps)
	}
	var gone []string // clusters whose profile went away in this sync
	for _, c := range mine {
		if seen[c.Name] {
			continue
		}
		if have := labels[c.ID]; len(have) != 1 || have[0].Name != core.LabelRemoved {
			gone = append(gone, c.Name)
		}
		if err := a.setLabels(ctx, c.ID, labels[c.ID], []string{core.LabelRemoved}); err != nil {
			return err
		}
		status.Profiles = append(status.Profiles, flow.ProfileStatus{Profile: c.Name, Cluster: lifecycle.ClusterKey(in.Provider, c.Name),
			State: flow.ProfileRemoved, Reason: "its ClusterProfile is gone: out of placements by label and of capacity placements"})
	}
	return a.publish(ctx, in, h, placeable, gone, status)
}

// profile brings one profile's cluster in step with it.
func (a *Activities) profile(ctx context.Context, in flow.InventoryInput, h *hub, p *v1alpha1.ClusterProfile, existing *store.Doc, labels labelIndex) (flow.ProfileStatus, error) {
	ps := flow.ProfileStatus{Profile: p.Name, Cluster: lifecycle.ClusterKey(in.Provider, p.Name)}
	skip := func(format string, args ...any) (flow.ProfileStatus, error) {
		ps.State, ps.Reason = flow.ProfileSkipped, fmt.Sprintf(format, args...)
		return ps, nil
	}
	if err := model.ValidateName("cluster name", p.Name); err != nil {
		return skip("%v", err)
	}
	if existing != nil && existing.Fields[FieldInventory] != in.Name {
		return skip("cluster %q of provider %q exists and was not registered from this inventory: left alone", p.Name, in.Provider)
	}
	if ok, why := core.Healthy(p); !ok {
		ps.State, ps.Reason = flow.ProfileUnhealthy, "control plane not healthy ("+why+"): out of placements by label and of capacity placements"
		if existing == nil {
			return skip("control plane not healthy (%s): not registered", why)
		}
		return ps, a.setLabels(ctx, existing.ID, labels[existing.ID], []string{core.LabelUnhealthy})
	}
	access, err := core.AccessOf(p, h.ns)
	if err != nil {
		return skip("%v", err)
	}
	kc, err := a.kubeconfigOf(ctx, h, p.Name, access)
	if err != nil {
		return skip("%v", err)
	}
	if _, err := kubeconfig.Parse(kc); err != nil {
		return skip("its credentials do not make a kubeconfig temco accepts: %v", err)
	}
	id := "/cluster-providers/" + in.Provider + "/clusters/" + p.Name
	if err := a.saveCluster(ctx, in, p, id, kc, existing); err != nil {
		return ps, err
	}
	ps.State, ps.Labels = flow.ProfileRegistered, core.ProfileLabels(p)
	return ps, a.setLabels(ctx, id, labels[id], ps.Labels)
}

// kubeconfigOf reads the credentials an access provider names from the hub, once the
// Secret has shown it is the profile's (a token is sent only to its own cluster).
func (a *Activities) kubeconfigOf(ctx context.Context, h *hub, profile string, acc core.Access) ([]byte, error) {
	s, err := h.core.CoreV1().Secrets(h.ns).Get(ctx, acc.Secret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("access provider %q: Secret %s/%s: %v", acc.Provider, h.ns, acc.Secret, apiReason(err))
	}
	if err := acc.CheckSecret(profile, s.Labels, s.Data); err != nil {
		return nil, err
	}
	v := s.Data[acc.Key]
	if len(v) == 0 {
		return nil, fmt.Errorf("access provider %q: Secret %s/%s has no key %q", acc.Provider, h.ns, acc.Secret, acc.Key)
	}
	if acc.Kubeconfig {
		return v, nil
	}
	return core.TokenKubeconfig(profile, acc.Cluster, strings.TrimSpace(string(v)))
}

// apiReason is an API error without what it may quote of the request.
func apiReason(err error) string {
	if s := apierrors.ReasonForError(err); s != metav1.StatusReasonUnknown {
		return string(s)
	}
	return err.Error()
}

// saveCluster registers the profile's cluster, or gives the registered one its new
// credentials. The kubeconfig is sealed as the API seals a registered one.
func (a *Activities) saveCluster(ctx context.Context, in flow.InventoryInput, p *v1alpha1.ClusterProfile, id string, kc []byte, existing *store.Doc) error {
	if existing != nil {
		if old, err := a.Keys.Open(existing.Secret, []byte(id)); err == nil && bytes.Equal(old, kc) {
			return nil
		}
	}
	sealed, err := a.Keys.Seal(kc, []byte(id))
	if err != nil {
		return err
	}
	if existing != nil {
		existing.Secret = sealed
		return a.Store.Update(ctx, existing)
	}
	body, err := json.Marshal(model.Resource[model.ClusterSpec]{Metadata: model.Metadata{Name: p.Name,
		Description: fmt.Sprintf("ClusterProfile %s/%s of cluster inventory %q", p.Namespace, p.Name, in.Name)}})
	if err != nil {
		return err
	}
	d := &store.Doc{ID: id, Parent: "/cluster-providers/" + in.Provider, Scope: "/cluster-providers/" + in.Provider,
		Kind: model.KindCluster, Name: p.Name, Body: string(body), Secret: sealed, Fields: map[string]string{FieldInventory: in.Name}}
	if err := a.Store.Create(ctx, d); store.CodeOf(err) != store.ErrExists {
		return err
	}
	return nil // created by an earlier attempt of this sync
}

// labelIndex holds label documents by cluster id.
type labelIndex map[string][]*store.Doc

// setLabels makes a cluster's labels (have now) exactly want.
func (a *Activities) setLabels(ctx context.Context, cluster string, have []*store.Doc, want []string) error {
	for _, l := range have {
		if !slices.Contains(want, l.Name) {
			if err := a.Store.Delete(ctx, l.ID); err != nil && store.CodeOf(err) != store.ErrNotFound {
				return err
			}
		}
	}
	for _, l := range want {
		if slices.ContainsFunc(have, func(d *store.Doc) bool { return d.Name == l }) {
			continue
		}
		body, _ := json.Marshal(model.ClusterLabel{Label: l})
		d := &store.Doc{ID: cluster + "/labels/" + l, Parent: cluster, Scope: providerOf(cluster),
			Kind: model.KindClusterLabel, Name: l, Body: string(body)}
		if err := a.Store.Create(ctx, d); err != nil && store.CodeOf(err) != store.ErrExists {
			return err
		}
	}
	return nil
}

// allDIGs lists every project's DIGs.
func (a *Activities) allDIGs(ctx context.Context) ([]*store.Doc, error) {
	projects, err := a.Store.List(ctx, store.Query{Kind: model.KindProject})
	if err != nil {
		return nil, err
	}
	var out []*store.Doc
	for _, p := range projects {
		digs, err := a.Store.List(ctx, store.Query{Scope: p.ID, Kind: model.KindDIG})
		if err != nil {
			return nil, err
		}
		out = append(out, digs...)
	}
	return out, nil
}

// eviction says what becomes of DIG digID placed on cluster (of provider), whose profile
// went away: an update, unless the DIG names the cluster in a placement (an operator's
// explicit choice, kept) or has a capacity placement (its autoscaler decides).
func (a *Activities) eviction(ctx context.Context, digID, provider, cluster string) (flow.EvictionStatus, error) {
	e := flow.EvictionStatus{DIG: digID, Cluster: lifecycle.ClusterKey(provider, cluster), Action: flow.EvictionUpdate,
		Reason: "its ClusterProfile is gone: the DIG is updated, and its placements by label no longer select the cluster"}
	capacity, err := a.Store.List(ctx, store.Query{Parent: digID, Kind: model.KindCapacityPlacement})
	if err != nil {
		return e, err
	}
	if len(capacity) > 0 {
		e.Action, e.Reason = flow.EvictionKept, "its capacity placement's autoscaler evicts the cluster"
		return e, nil
	}
	gpis, err := a.Store.List(ctx, store.Query{Parent: digID, Kind: model.KindGPI})
	if err != nil {
		return e, err
	}
	for _, g := range gpis {
		intents, err := a.Store.List(ctx, store.Query{Parent: g.ID, Kind: model.KindAppIntent})
		if err != nil {
			return e, err
		}
		for _, ai := range intents {
			r, err := model.Decode[model.AppIntentSpec](ai.Body)
			if err == nil && namesCluster(r.Spec.Intent, provider, cluster) {
				e.Action, e.Reason = flow.EvictionKept, "app intent "+ai.Name+" places an app on it by name: the operator changes it"
				return e, nil
			}
		}
	}
	return e, nil
}

// namesCluster reports whether a placement intent names the cluster.
func namesCluster(p model.PlacementIntent, provider, cluster string) bool {
	is := func(m model.ClusterMatch) bool { return m.ClusterProvider == provider && m.Cluster == cluster }
	for _, all := range p.AllOf {
		if is(all.ClusterMatch) || slices.ContainsFunc(all.AnyOf, is) {
			return true
		}
	}
	return slices.ContainsFunc(p.AnyOf, is)
}

// providerOf is the store id of a cluster's provider ("/cluster-providers/p").
func providerOf(cluster string) string {
	parts := strings.SplitN(cluster, "/", 4)
	return "/" + parts[1] + "/" + parts[2]
}

// record stores the status in the inventory's document.
func (a *Activities) record(ctx context.Context, id string, status flow.InventoryStatus) error {
	b, err := json.Marshal(status)
	if err != nil {
		return err
	}
	for {
		d, err := a.Store.Get(ctx, id)
		if store.CodeOf(err) == store.ErrNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		d.State = string(b)
		if err := a.Store.SetState(ctx, d); store.CodeOf(err) != store.ErrConflict {
			return err
		}
	}
}

func summary(s flow.InventoryStatus) string {
	n := map[string]int{}
	for _, p := range s.Profiles {
		n[p.State]++
	}
	return fmt.Sprintf("%d profiles: %d registered, %d unhealthy, %d removed, %d skipped; %d DIGs' decisions",
		len(s.Profiles), n[flow.ProfileRegistered], n[flow.ProfileUnhealthy], n[flow.ProfileRemoved], n[flow.ProfileSkipped], len(s.Decisions))
}

// publish writes, for every Instantiated DIG placed on clusters of the inventory, their
// PlacementDecisions, and deletes the inventory's decisions no DIG has any more. A DIG
// placed on a cluster of gone (whose profile went away in this sync) is to be evicted
// from it (status.Evictions).
func (a *Activities) publish(ctx context.Context, in flow.InventoryInput, h *hub, placeable, gone []string, status *flow.InventoryStatus) error {
	digs, err := a.allDIGs(ctx)
	if err != nil {
		return err
	}
	// First what every DIG is placed on (the store only), so that a hub that fails a write
	// below loses no eviction.
	type placed struct {
		id   string
		mine []string
	}
	var all []placed
	for _, d := range digs {
		info, err := digstate.Parse(d)
		if err != nil || info.Current() != lifecycle.StateInstantiated {
			continue
		}
		_, keys, err := a.Contexts.Overview(ctx, info.ContextID())
		if err != nil {
			return err
		}
		var mine []string
		for _, k := range keys {
			p, c := lifecycle.SplitClusterKey(k)
			if p == in.Provider && slices.Contains(placeable, c) {
				mine = append(mine, c)
			}
			if p == in.Provider && slices.Contains(gone, c) {
				e, err := a.eviction(ctx, d.ID, in.Provider, c)
				if err != nil {
					return err
				}
				status.Evictions = append(status.Evictions, e)
			}
		}
		if len(mine) > 0 {
			slices.Sort(mine)
			all = append(all, placed{d.ID, mine})
		}
	}
	want := map[string]bool{}
	for _, p := range all {
		objs := core.Decisions(h.ns, in.Name, p.id, p.mine)
		for _, o := range objs {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return err
			}
			_, err = h.dyn.Resource(decisions).Namespace(h.ns).Apply(ctx, o.Name, &unstructured.Unstructured{Object: u},
				metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
			if err != nil {
				return &hubError{fmt.Errorf("write PlacementDecision %s/%s: %w", h.ns, o.Name, err)}
			}
			want[o.Name] = true
		}
		status.Decisions = append(status.Decisions, flow.DecisionStatus{DIG: p.id, Key: core.DecisionKey(p.id), Slices: len(objs), Clusters: len(p.mine)})
	}
	old, err := h.dyn.Resource(decisions).Namespace(h.ns).List(ctx, metav1.ListOptions{
		LabelSelector: core.LabelManagedBy + "=" + core.SchedulerName + "," + core.LabelInventory + "=" + core.InventoryLabel(in.Name)})
	if err != nil {
		return &hubError{fmt.Errorf("list PlacementDecisions: %w", err)}
	}
	for _, o := range old.Items {
		if want[o.GetName()] {
			continue
		}
		err := h.dyn.Resource(decisions).Namespace(h.ns).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return &hubError{fmt.Errorf("delete PlacementDecision %s/%s: %w", h.ns, o.GetName(), err)}
		}
	}
	return nil
}
