package cluster

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPermanentTellsRejectedObjectsFromUnreachableClusters(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		err  error
		want bool
	}{
		{apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil), true},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), true},
		{apierrors.NewBadRequest("bad"), true},
		{fmt.Errorf("apply: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)), true},
		{apierrors.NewTooManyRequests("slow down", 1), false},
		{apierrors.NewConflict(gr, "x", errors.New("being deleted")), false},
		{apierrors.NewInternalError(errors.New("etcd")), false},
		{apierrors.NewServiceUnavailable("down"), false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
		{permanentErr{errors.New("the cluster does not serve example.com/v1, Kind=Widget")}, true},
	}
	for _, c := range cases {
		if got := permanent(c.err); got != c.want {
			t.Errorf("permanent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
