package cacerts

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
)

// keyFieldManager owns the tls.key of distributed Secrets: temco's apply ("temco") owns
// the rest, so neither removes the other's fields.
const keyFieldManager = "temco-ca-certs"

// PrepareCertDistribution builds a distribution's context from the enrolment as temco
// recorded it (EMCO reads the requests back from its monitor): per member cluster the
// Secret, ClusterIssuer, ProxyConfigs and ConfigCtrl. The enrolment must be instantiated
// and have signed a certificate for every member.
func (a *Activities) PrepareCertDistribution(ctx context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
	t := in.Target
	cert, err := a.loadCert(ctx, t)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	enrollment := t.Stage(lifecycle.CertEnrollment)
	_, info, err := digstate.Load(ctx, a.Store, enrollment.ID())
	if err != nil {
		return lifecycle.Plan{}, err
	}
	eCtx, status := info.ContextID(), ""
	if c, err := a.Contexts.Get(ctx, eCtx); err == nil {
		status = c.Status
	}
	if info.Current() != lifecycle.StateInstantiated || status != lifecycle.StatusInstantiated {
		return lifecycle.Plan{}, notReady(t, info.Current(), status)
	}
	ms, labels, err := a.prepare(ctx, t, in.ContextID, AppDistribution)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	placed := make([]*appctx.ClusterApp, 0, len(ms))
	for _, m := range ms {
		e, err := a.Keys.Get(ctx, eCtx, m.cluster)
		if err != nil || len(e.Certificate) == 0 {
			return lifecycle.Plan{}, invalid("%s: the enrolment (context %s) has no certificate for cluster %s, which the intent now selects: update the enrolment (POST %s/update) first",
				t, eCtx, m.cluster, enrollment.ID())
		}
		objs, err := distributionObjects(in.ContextID, cert.Metadata.Name,
			distributed{cluster: m.cluster, namespaces: m.namespaces, chain: chain(e.Certificate, e.CA), enrollment: eCtx}, labels)
		if err != nil {
			return lifecycle.Plan{}, err
		}
		placed = append(placed, &appctx.ClusterApp{App: AppDistribution, Cluster: m.cluster, Resources: pending(objs), Objects: objs})
	}
	// The app's own objects are none: each cluster has its own (ClusterApp.Objects).
	if err := a.Contexts.PutApps(ctx, in.ContextID, []*appctx.App{{Name: AppDistribution, Objects: []appctx.Object{}}}); err != nil {
		return lifecycle.Plan{}, err
	}
	return a.place(ctx, in.ContextID, AppDistribution, placed)
}

// notReady is the failure of a distribution whose enrolment is not done.
func notReady(t lifecycle.Target, state, status string) error {
	e := t.Stage(lifecycle.CertEnrollment)
	return invalid("%s needs its enrolment instantiated (it is %s, context %s): POST %s/instantiate first, and wait until it is Instantiated",
		t, orNone(state), orNone(status), e.ID())
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// DistributeCertificates applies a distribution's objects to one member cluster, then puts
// the enrolled key into its Secret there: the key goes from the sealed store to the
// cluster and nowhere else.
func (a *Activities) DistributeCertificates(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	res, err := a.Cluster.ApplyCluster(ctx, in)
	if err != nil || res.Failed > 0 {
		return res, err
	}
	placed, err := a.Contexts.ClusterApps(ctx, in.ContextID, in.Cluster)
	if err != nil {
		return res, err
	}
	var cs kubernetes.Interface
	for _, p := range placed {
		for _, o := range p.Objects {
			if o.Kind != "Secret" {
				continue
			}
			var u unstructured.Unstructured
			if err := json.Unmarshal([]byte(o.Manifest), &u.Object); err != nil {
				return res, err
			}
			eCtx := u.GetAnnotations()[keyAnnotation]
			if eCtx == "" {
				continue
			}
			if cs == nil {
				cfg, err := a.Clients.Admin(ctx, in.Cluster)
				if err != nil {
					return res, err
				}
				if cs, err = kubernetes.NewForConfig(cfg); err != nil {
					return res, err
				}
			}
			if err := a.installKey(ctx, cs, eCtx, in.Cluster, o.Namespace, o.Name); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// installKey adds the enrolled key of cluster as tls.key to its Secret there.
func (a *Activities) installKey(ctx context.Context, cs kubernetes.Interface, eCtx, cluster, namespace, name string) error {
	e, err := a.Keys.Get(ctx, eCtx, cluster)
	if err != nil {
		return invalid("the key of cluster %s is gone with the enrolment (context %s) it came from: update the distribution", cluster, eCtx)
	}
	keyPEM, err := a.Keys.Key(e)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"data":     map[string]any{"tls.key": keyPEM}}) // []byte: base64, as Secret data is
	if err != nil {
		return err
	}
	force := true
	_, err = cs.CoreV1().Secrets(namespace).Patch(ctx, name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: keyFieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("put the key into Secret %s/%s on %s: %w", namespace, name, cluster, err)
	}
	return nil
}
