package devstack

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// applyBound is how long a write the kube-apiserver could not finish is tried again.
const applyBound = 2 * time.Minute

// retryTransient runs write until it succeeds, fails for a reason a retry cannot change,
// or bound has passed. Why: a kube-apiserver on a loaded machine answers a write it did
// not finish in time with 504 ("unable to return a response in the time allotted", CI on
// 2026-11-29), or 500 when etcd timed out; the write may still land. Only for writes that
// may be repeated: server-side applies.
func retryTransient(ctx context.Context, bound time.Duration, write func(ctx context.Context) error) error {
	giveUp := time.Now().Add(bound)
	for backoff := 200 * time.Millisecond; ; backoff = min(2*backoff, 10*time.Second) {
		err := write(ctx)
		if err == nil || !transient(err) || time.Now().Add(backoff).After(giveUp) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// transient reports whether err says the server was slow or away, not that the request
// was wrong.
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}
