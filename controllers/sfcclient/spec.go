package sfcclient

import (
	"context"
	"fmt"
	"strings"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/internal/core/model"
)

// ClientSpec attaches a workload of the DIG to one end of a network chain of another DIG
// of the project. Field names are EMCO's.
type ClientSpec struct {
	ChainEnd              string `json:"chainEnd"`  // left or right
	SfcIntent             string `json:"sfcIntent"` // the network chain
	CompositeApp          string `json:"compositeApp"`
	CompositeAppVersion   string `json:"compositeAppVersion"`
	DeploymentIntentGroup string `json:"deploymentIntentGroup"`
	App                   string `json:"app"`
	WorkloadResource      string `json:"workloadResource"` // the workload's name
	ResourceType          string `json:"resourceType"`     // its kind, e.g. Deployment
}

// checkClient answers 400 with the reason, and records what the client names: its app
// and the chain, which cannot be deleted while the client exists (as in EMCO).
func checkClient(_ context.Context, q *api.Request[ClientSpec]) error {
	sp := q.Resource().Spec
	if err := validateClient(sp); err != nil {
		return api.BadRequest("%v", err)
	}
	q.Ref(sfc.AppID(q.DIG(), sp.App))
	q.Ref(chainID(projectOf(q.DIG()), sp))
	return nil
}

func validateClient(sp ClientSpec) error {
	if sp.ChainEnd != sfc.EndLeft && sp.ChainEnd != sfc.EndRight {
		return fmt.Errorf("spec.chainEnd must be %q or %q, not %q", sfc.EndLeft, sfc.EndRight, sp.ChainEnd)
	}
	for _, f := range []struct{ field, value string }{
		{"spec.sfcIntent", sp.SfcIntent}, {"spec.compositeApp", sp.CompositeApp}, {"spec.compositeAppVersion", sp.CompositeAppVersion},
		{"spec.deploymentIntentGroup", sp.DeploymentIntentGroup}, {"spec.app", sp.App}, {"spec.workloadResource", sp.WorkloadResource},
	} {
		if err := model.ValidateName(f.field, f.value); err != nil {
			return err
		}
	}
	return sfc.CheckWorkloadKind("spec.resourceType", sp.ResourceType)
}

// projectOf is the project name in a store id.
func projectOf(id string) string {
	rest, _ := strings.CutPrefix(id, "/projects/")
	p, _, _ := strings.Cut(rest, "/")
	return p
}
