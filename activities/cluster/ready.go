package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/readiness"
)

// get reads an object as applied (ref carries the namespace used); nil when absent.
func (c *client) get(ctx context.Context, ref appctx.Ref) (*unstructured.Unstructured, error) {
	ri, err := c.resource(ref)
	if err != nil {
		if permanent(err) {
			return nil, nil // the kind is not served: nothing of it can exist
		}
		return nil, err
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// ready reports whether an object exists and, for workloads, is ready.
func (c *client) ready(ctx context.Context, ref appctx.Ref) (bool, error) {
	u, err := c.get(ctx, ref)
	if err != nil || u == nil {
		return false, err
	}
	return readiness.Ready(u), nil
}
