package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	temco "github.com/temco/temco/client"
	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// Finalizer keeps a declared object until its temco resources are gone (a DIG's
// deployment terminated first).
const Finalizer = "temco.io/hub"

// Requeue intervals: a refused object is tried again in case what it waits for (its
// project, its composite app) appears; a running operation is followed until it ends.
const (
	retryRefused   = 30 * time.Second
	followRunning  = 5 * time.Second
	defaultRecheck = 5 * time.Minute // a periodic check, for changes made around the hub
)

// object is what every kind's type is to the reconciler.
type object interface {
	client.Object
	StatusCommon() *v1.CommonStatus
}

// kindOps is what differs between kinds.
type kindOps[T object] struct {
	kind string
	new  func() T
	// build declares the object's temco resources; project is a namespaced object's (its
	// namespace's binding), "" for the cluster-scoped kinds.
	build func(ctx context.Context, r *Reconciler, o T, project string) (*node, error)
	// after runs once the resources are written (a DIG's lifecycle); it answers when to
	// look again (0: at the periodic recheck).
	after func(ctx context.Context, r *Reconciler, o T, n *node) (time.Duration, error)
	// project names a cluster-scoped object's project for diagnostics (nil: none, or a
	// namespaced object's binding).
	project func(o T) string
	// finalize removes the temco resources; done false: look again (an operation runs).
	finalize func(ctx context.Context, r *Reconciler, o T, n *node) (done bool, err error)
}

// Reconciler holds what every kind's reconciler shares.
type Reconciler struct {
	reports reports
	Kube    client.Client
	// Fresh reads the object a reconcile acts on from the API server, not the cache: a
	// decision taken on a stale status (the operation the last reconcile started not in it
	// yet) would start that operation again. nil: Kube.
	Fresh client.Reader
	// API is temco's REST API: the hub writes nothing to temco's store itself, so every
	// object goes through the validation, tenancy and workflows REST clients get.
	API       *temco.Client
	Events    events.EventRecorder
	Namespace string // the hub controller's own: cluster-scoped kinds' Secrets and ConfigMaps
	// SecretNamespaces are the only namespaces whose Secrets the hub reads (nil: all).
	SecretNamespaces []string
}

// ownerOf is the owner string of o's temco resources.
func ownerOf(kind string, o client.Object) string {
	if o.GetNamespace() == "" {
		return fmt.Sprintf("hub:%s/%s", kind, o.GetName())
	}
	return fmt.Sprintf("hub:%s/%s/%s", kind, o.GetNamespace(), o.GetName())
}

// filesFor reads from the object's namespace, or the hub's for a cluster-scoped kind.
func (r *Reconciler) filesFor(o client.Object) files {
	ns := o.GetNamespace()
	if ns == "" {
		ns = r.Namespace
	}
	// Deleting needs only the paths: a ConfigMap deleted first must not keep the object.
	return files{kube: r.Kube, namespace: ns, secrets: r.SecretNamespaces, lenient: !o.GetDeletionTimestamp().IsZero()}
}

// generic is one kind's controller-runtime reconciler.
type generic[T object] struct {
	*Reconciler
	ops kindOps[T]
}

func (g *generic[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	o := g.ops.new()
	if err := g.fresh().Get(ctx, req.NamespacedName, o); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	t := g.tree(ownerOf(g.ops.kind, o))
	st := o.StatusCommon()
	before := st.DeepCopy()
	// A namespaced object acts as its namespace's project, or not at all.
	project, unbound := "", error(nil)
	if ns := o.GetNamespace(); ns != "" {
		if project, unbound = g.projectOf(ctx, ns); unbound == nil {
			ctx = actingAs(ctx, project)
		}
	}
	n, buildErr := (*node)(nil), unbound
	if unbound == nil {
		n, buildErr = g.ops.build(ctx, g.Reconciler, o, project)
	}
	if !o.GetDeletionTimestamp().IsZero() {
		if unbound != nil && st.Owner == v1.OwnerHub {
			// No project to act as: what the object wrote stays, for the admin.
			g.Events.Eventf(o, nil, corev1.EventTypeWarning, "Abandoned", "Delete",
				"%v: what it wrote in temco (%s) is left as it is", unbound, st.Path)
		}
		return g.delete(ctx, o, n)
	}
	if controllerutil.AddFinalizer(o, Finalizer) {
		if err := g.Kube.Update(ctx, o); err != nil {
			return ctrl.Result{}, err
		}
	}
	if n != nil {
		st.Path = "/v2" + n.path()
	}
	res, err := g.reconcile(ctx, o, t, n, buildErr)
	st.ObservedGeneration = o.GetGeneration()
	g.report(ctx, g.ops.kind, g.diagnosticsProject(o, project), o)
	if !equalStatus(before, st) || g.ops.kind == "DeploymentIntentGroup" {
		if uerr := g.writeStatus(ctx, o); uerr != nil {
			return ctrl.Result{}, client.IgnoreNotFound(uerr)
		}
	}
	return res, err
}

func (r *Reconciler) fresh() client.Reader {
	if r.Fresh != nil {
		return r.Fresh
	}
	return r.Kube
}

// writeStatus writes o's status, which must land: it records the operation this reconcile
// started (or is about to ask for). The status was computed from the object as the API
// server had it, and the hub is its only writer, so a conflict is someone else's change of
// spec or metadata, which a status write leaves alone: it is written again on the newer
// version.
func (r *Reconciler) writeStatus(ctx context.Context, o client.Object) error {
	for attempt := 1; ; attempt++ {
		err := r.Kube.Status().Update(ctx, o)
		if !apierrors.IsConflict(err) || attempt == 5 {
			return err
		}
		cur := o.DeepCopyObject().(client.Object)
		if err := r.fresh().Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			return err
		}
		o.SetResourceVersion(cur.GetResourceVersion())
	}
}

// reconcile writes the resources when the configuration changed, then runs the kind's
// lifecycle; a refusal is reported on the object and tried again later.
func (g *generic[T]) reconcile(ctx context.Context, o T, t *tree, n *node, buildErr error) (ctrl.Result, error) {
	st := o.StatusCommon()
	if buildErr != nil {
		return g.refused(o, buildErr)
	}
	h := hashNode(n)
	if h != st.AppliedHash || !meta.IsStatusConditionTrue(st.Conditions, v1.Accepted) {
		err := t.apply(ctx, n)
		if t.wrote > 0 || err == nil { // what it wrote is the object's: its delete removes it
			st.Owner = v1.OwnerHub
		}
		if err != nil {
			return g.refused(o, err)
		}
		st.AppliedHash = h
		if t.wrote > 0 {
			log.FromContext(ctx).Info("wrote temco resources", "path", n.path(), "resources", t.wrote)
		}
	}
	accepted := func() {
		setCondition(o, v1.Accepted, metav1.ConditionTrue, "Accepted", "temco accepted the configuration")
	}
	if g.ops.after == nil {
		accepted()
		setCondition(o, v1.Ready, metav1.ConditionTrue, "Stored", "stored in temco")
		return ctrl.Result{RequeueAfter: defaultRecheck}, nil
	}
	next, err := g.ops.after(ctx, g.Reconciler, o, n)
	// An operation the API refuses (a DIG naming a profile or cloud that is not there
	// cannot be instantiated) is a refusal of what the object declares, as the API's
	// refusal of a resource is: reported, skipped, tried again.
	if r, ok := IsRefusal(err); ok {
		return g.refused(o, r)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	accepted()
	if next == 0 {
		next = defaultRecheck
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// refused reports a 4xx (or an unreadable ConfigMap) on the object — condition and
// Event — and looks again later; anything else is returned for controller-runtime's
// backoff.
func (g *generic[T]) refused(o T, err error) (ctrl.Result, error) {
	r, ok := IsRefusal(err)
	if !ok {
		if apierrors.IsNotFound(err) { // a ConfigMap or Secret not there (yet)
			r = &Refusal{Code: 404, Message: err.Error()}
		} else {
			return ctrl.Result{}, err
		}
	}
	if c := meta.FindStatusCondition(o.StatusCommon().Conditions, v1.Accepted); c == nil || c.Message != r.Message || c.Status != metav1.ConditionFalse {
		g.Events.Eventf(o, nil, corev1.EventTypeWarning, "Refused", "Reconcile", "%s", r.Message)
	}
	setCondition(o, v1.Accepted, metav1.ConditionFalse, "Refused", r.Message)
	setCondition(o, v1.Ready, metav1.ConditionFalse, "NotAccepted", "the configuration was refused")
	return ctrl.Result{RequeueAfter: retryRefused}, nil
}

// delete removes the temco resources, then the finalizer.
func (g *generic[T]) delete(ctx context.Context, o T, n *node) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(o, Finalizer) {
		return ctrl.Result{}, nil
	}
	// Only what the object wrote is removed: nothing when it never got its resource (a
	// path apply refuses, a name REST holds, a namespace unbound since).
	if n != nil && checkPath(n.path()) == nil && o.StatusCommon().Owner == v1.OwnerHub {
		done, err := g.ops.finalize(ctx, g.Reconciler, o, n)
		if r, ok := IsRefusal(err); ok {
			setCondition(o, v1.Ready, metav1.ConditionFalse, "DeleteRefused", r.Message)
			g.Events.Eventf(o, nil, corev1.EventTypeWarning, "DeleteRefused", "Delete", "%s", r.Message)
			_ = g.Kube.Status().Update(ctx, o)
			return ctrl.Result{RequeueAfter: retryRefused}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			_ = g.Kube.Status().Update(ctx, o)
			return ctrl.Result{RequeueAfter: followRunning}, nil
		}
	}
	g.unreport(ctx, g.ops.kind, o)
	controllerutil.RemoveFinalizer(o, Finalizer)
	return ctrl.Result{}, g.Kube.Update(ctx, o)
}

// diagnosticsProject is the project o's report is filed under: a namespaced object's
// binding ("" when it has none, which only admins see).
func (g *generic[T]) diagnosticsProject(o T, bound string) string {
	if g.ops.project != nil {
		return g.ops.project(o)
	}
	return bound
}

// removeTree is the finalize of the kinds with no lifecycle: delete the resource tree.
func removeTree[T object](kind string) func(ctx context.Context, r *Reconciler, o T, n *node) (bool, error) {
	return func(ctx context.Context, r *Reconciler, o T, n *node) (bool, error) {
		t := r.tree(ownerOf(kind, o))
		return true, t.remove(ctx, n.path(), n.children)
	}
}

func setCondition(o object, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&o.StatusCommon().Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: msg, ObservedGeneration: o.GetGeneration()})
}

// hashNode is the configuration a tree declares, files by digest.
func hashNode(n *node) string {
	type flat struct {
		Path     string
		Body     any
		File     string
		Uses     string `json:",omitempty"`
		Children []string
	}
	var walk func(*node) string
	walk = func(n *node) string {
		f := flat{Path: n.path(), Body: n.body, Uses: n.uses}
		if n.multipart {
			s := sha256.Sum256(n.file)
			f.File = hex.EncodeToString(s[:])
		}
		for _, c := range n.children {
			f.Children = append(f.Children, walk(c))
		}
		b, _ := json.Marshal(f)
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	return walk(n)[:16]
}

func equalStatus(a, b *v1.CommonStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
