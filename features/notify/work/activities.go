// Package work holds notify's activity: one delivery of an event to its receiver.
package work

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/features/notify/flow"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// timeout bounds one delivery attempt: a receiver takes an event in seconds or is slow.
const timeout = 15 * time.Second

// errRefused types a delivery the receiver refused for good: not retried.
const errRefused = "DeliveryRefused"

// Activities deliver events.
type Activities struct {
	Store    *store.Store
	Keys     *seal.Keyring
	Statuses *feed.Statuses
	// Client posts only to the hosts an admin allowed (TEMCO_NOTIFY_HOSTS_ALLOW), and
	// follows no redirect.
	Client *http.Client
}

// NewActivities builds the activities over the hosts allowed.
func NewActivities(st *store.Store, keys *seal.Keyring, allow *egress.Allow) *Activities {
	a := &Activities{Store: st, Keys: keys, Client: allow.HTTPClient(timeout)}
	if st != nil {
		a.Statuses = feed.OpenStatuses(st.Database())
	}
	return a
}

// DeliverEvent posts in.Event to its receiver, read anew (its URL and secret may have
// changed since the event was raised), and records the attempt.
func (a *Activities) DeliverEvent(ctx context.Context, in flow.DeliverInput) (flow.Delivered, error) {
	doc, err := a.Store.Get(ctx, in.Receiver)
	if store.CodeOf(err) == store.ErrNotFound {
		return flow.Delivered{Gone: true}, nil
	}
	if err != nil {
		return flow.Delivered{}, err
	}
	info := activity.GetInfo(ctx)
	attempt := events.Attempt{Event: in.Event.ID, Type: in.Event.Type, Time: time.Now().UTC(), Attempt: info.Attempt}
	sendErr := a.send(ctx, doc, &in.Event)
	if sendErr != nil {
		attempt.Error = sendErr.Error()
	}
	if err := a.Statuses.Record(ctx, in.Receiver, attempt, events.Waiting{Queued: in.Queued, Dropped: in.Dropped}, isRefused(sendErr)); err != nil {
		return flow.Delivered{}, err
	}
	return flow.Delivered{}, sendErr
}

// send posts e in the receiver's format.
func (a *Activities) send(ctx context.Context, doc *store.Doc, e *events.Event) error {
	r, err := model.Decode[events.Receiver](doc.Body)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), errRefused, nil)
	}
	sealed, err := a.sealed(doc)
	if err != nil {
		return err
	}
	body, err := encode(r.Spec.Format, e)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), errRefused, nil)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sealed.URL, bytes.NewReader(body))
	if err != nil {
		return temporal.NewNonRetryableApplicationError("the receiver's URL: "+err.Error(), errRefused, nil)
	}
	req.Header.Set("User-Agent", "temco-notify")
	req.Header.Set("Content-Type", "application/json")
	if r.Spec.Format == events.FormatCloudEvents {
		now := time.Now()
		req.Header.Set("Content-Type", "application/cloudevents+json")
		req.Header.Set(events.HeaderID, e.ID)
		req.Header.Set(events.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(events.HeaderSignature, events.Sign(sealed.Secret, e.ID, now, body))
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		return errOf(req.URL.Host, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code >= 300 && code < 400: // redirects are not followed: the URL is to be fixed
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s answered %s: temco follows no redirect; give the URL it names", req.URL.Host, resp.Status), errRefused, nil)
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s refused the event: %s", req.URL.Host, resp.Status), errRefused, nil)
	default:
		return fmt.Errorf("%s answered %s", req.URL.Host, resp.Status)
	}
}

// errOf is what a failed post to host says: egress' errors say no more than "refused" or
// "did not answer" (how a connection failed would tell a tenant what listens where). A
// refusal is returned as is, not wrapped: Temporal reads NonRetryable from the error
// an activity returns, not from one it wraps. Never the URL, which the client's
// *url.Error names: its path may be the receiver's token, and the error is recorded in
// the receiver's status.
func errOf(host string, err error) error {
	var refused *egress.Refused
	var unreachable *egress.Unreachable
	var withURL *url.Error
	switch {
	case errors.As(err, &refused):
		return temporal.NewNonRetryableApplicationError(refused.Error(), errRefused, nil)
	case errors.As(err, &unreachable):
		err = unreachable
	case errors.As(err, &withURL):
		err = withURL.Err
	}
	return fmt.Errorf("post to %s: %w", host, err)
}

func (a *Activities) sealed(doc *store.Doc) (events.Sealed, error) {
	var s events.Sealed
	if a.Keys == nil || len(doc.Secret) == 0 {
		return s, temporal.NewNonRetryableApplicationError("the receiver's URL is sealed and no key is configured to open it", errRefused, nil)
	}
	plain, err := a.Keys.Open(doc.Secret, []byte(doc.ID))
	if err != nil {
		return s, temporal.NewNonRetryableApplicationError("open the receiver's sealed URL: "+err.Error(), errRefused, nil)
	}
	if err := json.Unmarshal(plain, &s); err != nil {
		return s, temporal.NewNonRetryableApplicationError("decode the receiver's sealed URL: "+err.Error(), errRefused, nil)
	}
	return s, nil
}

func encode(format string, e *events.Event) ([]byte, error) {
	if format == events.FormatSlack {
		return events.Slack(e)
	}
	return events.CloudEvent(e)
}

func isRefused(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == errRefused
}
