package cacerts

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"k8s.io/client-go/rest"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Activities run the enrolment and distribution of certificate intents: each builds its
// context from the intent (Prepare...), and replaces the usual per-cluster apply, delete
// and prune with one that also signs, installs or forgets the keys.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Keys     *Keys
	Clients  Admins
	Cluster  ClusterOps // applies, deletes and prunes the contexts' objects
}

// ClusterOps are the per-cluster activities of every lifecycle (activities/cluster's), which
// enrolment and distribution wrap: given, not imported, so that a controller stays below
// the activities in the layers.
type ClusterOps interface {
	ApplyCluster(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error)
	DeleteCluster(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error)
	PruneCluster(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error)
}

// Admins give a registered cluster's admin credentials (the issuing cluster's, to sign).
type Admins interface {
	Admin(ctx context.Context, clusterKey string) (*rest.Config, error)
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
}

// loadCert reads the certificate intent of t.
func (a *Activities) loadCert(ctx context.Context, t lifecycle.Target) (model.Resource[CertSpec], error) {
	cert, _, err := a.loadCertDoc(ctx, t)
	return cert, err
}

// loadCertDoc reads the certificate intent of t, with its stored document.
func (a *Activities) loadCertDoc(ctx context.Context, t lifecycle.Target) (model.Resource[CertSpec], *store.Doc, error) {
	d, err := a.Store.Get(ctx, t.CertID())
	if store.CodeOf(err) == store.ErrNotFound {
		return model.Resource[CertSpec]{}, nil, invalid("%s: the certificate intent no longer exists", t)
	}
	if err != nil {
		return model.Resource[CertSpec]{}, nil, err
	}
	cert, err := model.Decode[CertSpec](d.Body)
	return cert, d, err
}

// PrepareCertEnrollment builds an enrolment's context: per member cluster a new key
// (stored sealed) and the issuer's request to sign it (a cert-manager CertificateRequest,
// or a CertificateSigningRequest for the cluster's signer), all placed on the issuing
// cluster. What EMCO would only find out while enrolling (no key size or duration, no
// member, an SGX cluster) fails it here, before anything is applied.
func (a *Activities) PrepareCertEnrollment(ctx context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
	t := in.Target
	cert, doc, err := a.loadCertDoc(ctx, t)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	sp := &cert.Spec
	switch {
	case sp.CSRInfo.KeySize == 0:
		return lifecycle.Plan{}, invalid("%s: spec.csrInfo.keySize is not set (EMCO applies no default): set it, e.g. to 4096", t)
	case sp.Duration == "":
		return lifecycle.Plan{}, invalid("%s: spec.duration is not set (EMCO applies no default): set it, e.g. to 8760h", t)
	}
	iss := issuerFor(sp.IssuerRef)
	issuing := lifecycle.ClusterKey(sp.IssuingCluster.ClusterProvider, sp.IssuingCluster.Cluster)
	if ok, err := a.Store.Exists(ctx, lifecycle.ClusterID(issuing)); err != nil {
		return lifecycle.Plan{}, err
	} else if !ok {
		return lifecycle.Plan{}, invalid("%s: the issuing cluster %s is not registered", t, issuing)
	}
	if t.Project != "" && !writtenByAdmin(doc) { // a tenant's: the clouds may have changed since it was written
		if ok, err := inProjectClouds(ctx, a.Store, t.Project, issuing); err != nil {
			return lifecycle.Plan{}, err
		} else if !ok {
			return lifecycle.Plan{}, invalid("%s: the issuing cluster %s is not a cluster of a logical cloud of project %q", t, issuing, t.Project)
		}
	}
	ms, labels, err := a.prepare(ctx, t, in.ContextID, AppEnrollment)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	objs := make([]appctx.Object, 0, len(ms))
	for _, m := range ms {
		if sgx, err := kvValue(ctx, a.Store, m.cluster, "sgx", "enabled"); err != nil {
			return lifecycle.Plan{}, err
		} else if sgx == "true" {
			return lifecycle.Plan{}, invalid("%s: cluster %s is SGX-enabled (kv-pair sgx.enabled); temco does not support Intel TCS issuers", t, m.cluster)
		}
		cn, err := kvValue(ctx, a.Store, m.cluster, "csrData", "commonName")
		if err != nil {
			return lifecycle.Plan{}, err
		}
		if cn == "" {
			cn = commonName(cert.Metadata.Name, m.cluster, sp.CSRInfo.Subject.Names.CommonNamePrefix)
		}
		activity.RecordHeartbeat(ctx, "key of "+m.cluster)
		name := requestName(in.ContextID, cert.Metadata.Name, m.cluster)
		e, err := a.Keys.Get(ctx, in.ContextID, m.cluster) // an earlier attempt's key is signed, not a new one
		if err != nil {
			keyPEM, kerr := newKey(sp.CSRInfo.KeySize)
			if kerr != nil {
				return lifecycle.Plan{}, invalid("%s: %v", t, kerr)
			}
			if e, err = a.Keys.Put(ctx, in.ContextID, m.cluster, name, sp.IssuerRef, keyPEM); err != nil {
				return lifecycle.Plan{}, err
			}
		}
		keyPEM, err := a.Keys.Key(e)
		if err != nil {
			return lifecycle.Plan{}, err
		}
		csr, err := certificateRequest(sp, cn, keyPEM)
		if err != nil {
			return lifecycle.Plan{}, invalid("%s: %v", t, err)
		}
		obj, err := iss.request(name, sp, csr, labels)
		if err != nil {
			return lifecycle.Plan{}, err
		}
		objs = append(objs, obj)
	}
	if err := a.Contexts.PutApps(ctx, in.ContextID, []*appctx.App{{Name: AppEnrollment, Objects: objs}}); err != nil {
		return lifecycle.Plan{}, err
	}
	return a.place(ctx, in.ContextID, AppEnrollment, []*appctx.ClusterApp{{App: AppEnrollment, Cluster: issuing, Resources: pending(objs)}})
}

// place stores where a context's one app goes, in one batch.
func (a *Activities) place(ctx context.Context, ctxID, app string, placed []*appctx.ClusterApp) (lifecycle.Plan, error) {
	batchOf := map[string]int{}
	clusters := make([]string, len(placed))
	for i, p := range placed {
		batchOf[p.Cluster], clusters[i] = 0, p.Cluster
	}
	if err := a.Contexts.PutPlacement(ctx, ctxID, placed, batchOf); err != nil {
		return lifecycle.Plan{}, err
	}
	if err := a.Contexts.Set(ctx, ctxID, bson.D{{Key: "apps", Value: []string{app}}}); err != nil {
		return lifecycle.Plan{}, err
	}
	return lifecycle.Plan{Apps: 1, Clusters: len(placed), Batches: 1, FirstBatch: clusters}, nil
}

func pending(objs []appctx.Object) []appctx.ResourceStatus {
	res := make([]appctx.ResourceStatus, len(objs))
	for i, o := range objs {
		res[i] = appctx.ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending}
	}
	return res
}

// EnrollCertificates applies an enrolment's requests to the issuing cluster and has each
// issued (issuer.issued), then records the certificate with the issuing CA beside the key.
func (a *Activities) EnrollCertificates(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	res, err := a.Cluster.ApplyCluster(ctx, in)
	if err != nil || res.Failed > 0 {
		return res, err
	}
	enrolled, err := a.Keys.List(ctx, in.ContextID)
	if err != nil {
		return res, err
	}
	cfg, err := a.Clients.Admin(ctx, in.Cluster)
	if err != nil {
		return res, err
	}
	on, err := newIssuingCluster(cfg, func(what string) { activity.RecordHeartbeat(ctx, what) })
	if err != nil {
		return res, err
	}
	for _, e := range enrolled {
		if len(e.Certificate) > 0 {
			continue
		}
		cert, ca, err := issuerFor(e.Issuer).issued(ctx, on, e.Request)
		if err != nil {
			return res, lifecycle.Within(err, "enrol %s on %s", e.Cluster, in.Cluster)
		}
		keyPEM, err := a.Keys.Key(e)
		if err != nil {
			return res, err
		}
		if err := checkIssued(cert, ca, keyPEM); err != nil {
			return res, lifecycle.Within(err, "enrol %s on %s", e.Cluster, in.Cluster)
		}
		if err := a.Keys.Signed(ctx, in.ContextID, e.Cluster, cert, ca); err != nil {
			return res, err
		}
	}
	return res, nil
}

// WithdrawCertificates deletes an enrolment's requests from the issuing cluster, then
// forgets its keys.
func (a *Activities) WithdrawCertificates(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	res, err := a.Cluster.DeleteCluster(ctx, in)
	if err != nil || res.Failed > 0 {
		return res, err
	}
	return res, a.Keys.DeleteContext(ctx, in.ContextID)
}

// PruneCertificates removes, after an enrolment's update, the requests of the enrolment
// it replaced, then forgets that enrolment's keys: the new one made new keys.
func (a *Activities) PruneCertificates(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	res, err := a.Cluster.PruneCluster(ctx, in)
	if err != nil || res.Failed > 0 {
		return res, err
	}
	return res, a.Keys.DeleteContext(ctx, in.ContextID)
}
