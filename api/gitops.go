// GitOps clusters: what their registration must say, and what they need to be deployed to.

package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// checkGitOps validates spec.gitOps of a GitOps cluster. EMCO stores any type and fails at
// deploy time; temco refuses an unknown one at registration. The sync objects may be
// created later (EMCO's creation order): instantiate checks them.
func checkGitOps(g model.GitOpsSpec) error {
	if _, ok := syncobject.Type(g.GitOpsType); !ok {
		return badRequest("spec.gitOps.gitOpsType %q is not supported: use %s (or its alias fluxv2), %s or %s",
			g.GitOpsType, syncobject.FluxCD, syncobject.AzureArcV2, syncobject.Anthos)
	}
	if g.GitOpsReferenceObject == "" {
		return badRequest("spec.gitOps.gitOpsReferenceObject is required: the cluster sync object holding the repository's url, branch, userName, gitToken and repoName")
	}
	switch g.GitOpsSecrets {
	case "", model.GitOpsSecretsCommit, model.GitOpsSecretsOmit:
		return nil
	}
	return badRequest("spec.gitOps.gitOpsSecrets %q is not supported: use %s (the default: Secrets are committed to git in clear) or %s (they are left out of git)",
		g.GitOpsSecrets, model.GitOpsSecretsCommit, model.GitOpsSecretsOmit)
}

// gitOpsAccessProblems names what GitOps cluster provider+cluster lacks to be deployed
// to: its reference object (with EMCO's mandatory keys) and resource object (valid timers).
func (s *Server) gitOpsAccessProblems(ctx context.Context, provider, cluster string) ([]string, error) {
	c, err := s.Store.Get(ctx, "/cluster-providers/"+provider+"/clusters/"+cluster)
	if err != nil {
		return nil, err
	}
	spec, err := model.Decode[model.ClusterSpec](c.Body)
	if err != nil {
		return nil, err
	}
	g := spec.Spec.GitOps
	var out []string
	ref, err := s.syncObjectValues(ctx, provider, g.GitOpsReferenceObject)
	switch {
	case err != nil:
		return nil, err
	case ref == nil:
		out = append(out, fmt.Sprintf("its gitOpsReferenceObject %q is not a cluster sync object of provider %q", g.GitOpsReferenceObject, provider))
	default:
		if m := syncobject.Missing(ref); len(m) > 0 {
			out = append(out, fmt.Sprintf("its gitOpsReferenceObject %q lacks %s", g.GitOpsReferenceObject, strings.Join(m, ", ")))
		}
	}
	if g.GitOpsResourceObject == "" {
		return out, nil
	}
	res, err := s.syncObjectValues(ctx, provider, g.GitOpsResourceObject)
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		out = append(out, fmt.Sprintf("its gitOpsResourceObject %q is not a cluster sync object of provider %q", g.GitOpsResourceObject, provider))
	default:
		if _, err := syncobject.TimersOf(res); err != nil {
			out = append(out, fmt.Sprintf("its gitOpsResourceObject %q: %v", g.GitOpsResourceObject, err))
		}
	}
	return out, nil
}

// syncObjectValues reads a sync object's values as stored (secret values masked); nil
// when it does not exist.
func (s *Server) syncObjectValues(ctx context.Context, provider, name string) (map[string]string, error) {
	d, err := s.Store.Get(ctx, "/cluster-providers/"+provider+"/cluster-sync-objects/"+name)
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kv, err := model.Decode[model.KVSpec](d.Body)
	if err != nil {
		return nil, err
	}
	return syncobject.Values(kv.Spec.KV, nil), nil
}
