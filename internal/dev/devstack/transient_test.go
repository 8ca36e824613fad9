package devstack

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAWriteTheServerDidNotFinishIsTriedAgain(t *testing.T) {
	gr := schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories"}
	calls := 0
	err := retryTransient(context.Background(), time.Minute, func(context.Context) error {
		if calls++; calls < 3 {
			return apierrors.NewServerTimeout(gr, "patch", 0)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("after two 504s: err %v after %d calls, want success on the third", err, calls)
	}
}

func TestAWrongWriteIsNotTriedAgain(t *testing.T) {
	calls := 0
	refused := apierrors.NewBadRequest("strict decoding error: unknown field")
	err := retryTransient(context.Background(), time.Minute, func(context.Context) error { calls++; return refused })
	if !errors.Is(err, refused) || calls != 1 {
		t.Fatalf("a 400: err %v after %d calls, want it at once", err, calls)
	}
}

func TestTransientWritesAreTriedOnlyWithinTheBound(t *testing.T) {
	calls := 0
	err := retryTransient(context.Background(), 0, func(context.Context) error {
		calls++
		return apierrors.NewServiceUnavailable("etcd is away")
	})
	if !apierrors.IsServiceUnavailable(err) || calls != 1 {
		t.Fatalf("bound 0: err %v after %d calls, want the 503 after one", err, calls)
	}
}
