package sfcclient

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// controller labels the pods of every sfc client's workload.
type controller struct {
	store sfc.Docs
}

// Run plans every sfc client of the DIG and records the edits at once, or refuses.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil // the labels go with the context
	}
	dig := lifecycle.Target{Project: in.Project, CompositeApp: in.CompositeApp, Version: in.CompositeAppVersion, DIG: in.DeploymentIntentGroup}
	clients, err := controllers.List[ClientSpec](ctx, c.store, store.Query{Parent: dig.ID(), Kind: KindClient})
	if err != nil {
		return err
	}
	if len(clients) == 0 {
		return contract.Refuse("the deployment intent group names controller %s (intent %q) but has no sfc-clients", in.Controller, in.Intent)
	}
	cloud, cloudLabels, err := c.cloudLabels(ctx, dig)
	if err != nil {
		return err
	}
	apps, err := v.Apps(ctx)
	if err != nil {
		return err
	}
	var edits []contract.Edit
	for _, cl := range clients {
		podLabels, err := c.podLabels(ctx, in.Project, cl, cloud, cloudLabels)
		if err != nil {
			return err
		}
		e, err := labelWorkload(ctx, v, apps, cl, podLabels)
		if err != nil {
			return err
		}
		if e != nil {
			edits = append(edits, *e)
		}
	}
	return v.Edit(edits...)
}

// cloudLabels are the labels of the DIG's logical cloud.
func (c *controller) cloudLabels(ctx context.Context, dig lifecycle.Target) (string, map[string]string, error) {
	d, err := c.store.Get(ctx, dig.ID())
	if err != nil {
		return "", nil, err
	}
	ds, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil {
		return "", nil, err
	}
	name := ds.Spec.LogicalCloud
	d, err = c.store.Get(ctx, lifecycle.LogicalCloudID(dig.Project, name))
	if store.CodeOf(err) == store.ErrNotFound {
		return "", nil, contract.Refuse("the deployment intent group's logical cloud %q does not exist", name)
	}
	if err != nil {
		return "", nil, err
	}
	lc, err := model.Decode[model.LogicalCloudSpec](d.Body)
	if err != nil {
		return "", nil, err
	}
	return name, lc.Spec.Labels, nil
}

// podLabels picks, as EMCO does, the first client selector of the client's chain end whose
// namespace labels are all among the logical cloud's, and returns its pod labels.
func (c *controller) podLabels(ctx context.Context, project string, cl sfc.Named[ClientSpec], cloud string, cloudLabels map[string]string) (map[string]string, error) {
	sp := cl.Spec
	id := chainID(project, sp)
	where := fmt.Sprintf("sfc client %q: the %s end of network chain %q (composite app %s version %s, deployment intent group %s)",
		cl.Name, sp.ChainEnd, sp.SfcIntent, sp.CompositeApp, sp.CompositeAppVersion, sp.DeploymentIntentGroup)
	if _, err := c.store.Get(ctx, id); store.CodeOf(err) == store.ErrNotFound {
		return nil, contract.Refuse("%s: there is no such network chain", where)
	} else if err != nil {
		return nil, err
	}
	selectors, err := sfc.ClientSelectors(ctx, c.store, id, sp.ChainEnd)
	if err != nil {
		return nil, err
	}
	if len(selectors) == 0 {
		return nil, contract.Refuse("%s has no client selectors", where)
	}
	var tried []string
	for _, s := range selectors {
		ns := s.Spec.NamespaceSelector.MatchLabels
		if len(ns) > 0 && labels.SelectorFromSet(ns).Matches(labels.Set(cloudLabels)) {
			if len(s.Spec.PodSelector.MatchLabels) == 0 {
				return nil, contract.Refuse("%s: client selector %q has no pod labels", where, s.Name)
			}
			return s.Spec.PodSelector.MatchLabels, nil
		}
		tried = append(tried, fmt.Sprintf("%s {%s}", s.Name, labels.Set(ns)))
	}
	return nil, contract.Refuse("%s: no client selector's namespace labels (%s) are all among the labels of logical cloud %q {%s}",
		where, strings.Join(tried, ", "), cloud, labels.Set(cloudLabels))
}

// labelWorkload is the edit giving the client's workload the pod labels on every cluster
// of its app (nil when the app is placed nowhere, which the commit refuses anyway).
func labelWorkload(ctx context.Context, v contract.Context, apps []contract.App, cl sfc.Named[ClientSpec], podLabels map[string]string) (*contract.Edit, error) {
	w := sfc.Workload{App: cl.Spec.App, Kind: cl.Spec.ResourceType, Name: cl.Spec.WorkloadResource}
	var app *contract.App
	for i := range apps {
		if apps[i].Name == w.App {
			app = &apps[i]
		}
	}
	if app == nil {
		return nil, contract.Refuse("sfc client %q names app %q, which the deployment does not have", cl.Name, w.App)
	}
	if len(app.Clusters) == 0 {
		return nil, nil
	}
	for _, cluster := range app.Clusters {
		objs, err := v.Resources(ctx, w.App, cluster)
		if err != nil {
			return nil, err
		}
		if err := sfc.CheckPodLabels(w, cluster, objs, podLabels); err != nil {
			return nil, contract.Refuse("sfc client %q: %v", cl.Name, err)
		}
	}
	e, err := sfc.LabelPods(w, nil, podLabels)
	if err != nil {
		return nil, contract.Refuse("sfc client %q: %v", cl.Name, err)
	}
	return &e, nil
}

// chainID is the store id of the network chain a client names, in the client's project.
func chainID(project string, sp ClientSpec) string {
	dig := lifecycle.Target{Project: project, CompositeApp: sp.CompositeApp, Version: sp.CompositeAppVersion, DIG: sp.DeploymentIntentGroup}
	return sfc.ChainID(dig.ID(), sp.SfcIntent)
}
