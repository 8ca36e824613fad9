package sds

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serverAddresses reads the server's Service and nodes on each of its clusters.
func (c *controller) serverAddresses(ctx context.Context, d discovery, ns string) ([]address, error) {
	var out []address
	for _, cluster := range d.Servers {
		cs, err := c.src.Client(ctx, cluster)
		if err != nil {
			return nil, err
		}
		svc, err := cs.CoreV1().Services(ns).Get(ctx, d.Service, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the server's Service %s/%s is not on %s: the app's chart must have it", ns, d.Service, cluster)
		} else if err != nil {
			return nil, fmt.Errorf("read Service %s/%s on %s: %w", ns, d.Service, cluster, err)
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list the nodes of %s: %w", cluster, err)
		}
		a, err := addressOf(cluster, svc, nodes.Items)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// converge makes each cluster hold exactly the entries want has for it: the owner's
// objects not wanted (nor kept) are deleted, the wanted ones applied.
func (c *controller) converge(ctx context.Context, o owner, clusters []string, want map[string][]entry, keep map[string][]string) error {
	for _, cluster := range clusters {
		if err := c.convergeCluster(ctx, o, cluster, want[cluster], keep[cluster]); err != nil {
			return fmt.Errorf("service discovery entries on %s: %w", cluster, err)
		}
	}
	return nil
}

func (c *controller) convergeCluster(ctx context.Context, o owner, cluster string, want []entry, keep []string) error {
	cs, err := c.src.Client(ctx, cluster)
	if err != nil {
		return err
	}
	core := cs.CoreV1()
	wanted := slices.Clone(keep)
	for _, e := range want {
		wanted = append(wanted, e.key())
	}
	sel := metav1.ListOptions{LabelSelector: o.selector()}
	svcs, err := core.Services("").List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list Services: %w", err)
	}
	for _, s := range svcs.Items {
		if !slices.Contains(wanted, s.Namespace+"/"+s.Name) {
			if err := core.Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete Service %s/%s: %w", s.Namespace, s.Name, err)
			}
		}
	}
	eps, err := core.Endpoints("").List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list Endpoints: %w", err)
	}
	for _, e := range eps.Items {
		if !slices.Contains(wanted, e.Namespace+"/"+e.Name) {
			if err := core.Endpoints(e.Namespace).Delete(ctx, e.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete Endpoints %s/%s: %w", e.Namespace, e.Name, err)
			}
		}
	}
	apply := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	for _, e := range want { // Endpoints first, as EMCO orders them
		if _, err := core.Endpoints(*e.Endpoints.Namespace).Apply(ctx, e.Endpoints, apply); err != nil {
			return fmt.Errorf("apply Endpoints %s: %w", e.key(), err)
		}
		if _, err := core.Services(*e.Service.Namespace).Apply(ctx, e.Service, apply); err != nil {
			return fmt.Errorf("apply Service %s: %w", e.key(), err)
		}
	}
	return nil
}
