package notify

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/model"
)

// Notifications' part of the api (docs/notifications.md): a project's receivers (its
// events) and an admin's (the fleet's, at the top level: admins only, as every route
// outside a project), each one's delivery status, and the feed of events.
const (
	routeProjectReceivers = "/projects/:project/notification-receivers"
	routeAdminReceivers   = "/notification-receivers"
	paramReceiver         = "notificationReceiver"
	routeProjectEvents    = "/projects/:project/events"
	routeEvents           = "/events"
	// feedCap bounds one read of the feed.
	feedCap = 500
)

// Receivers run the delivery workflows: the Starter, or a test's.
type Receivers interface {
	// StopDelivering ends a deleted receiver's delivery workflow.
	StopDelivering(ctx context.Context, receiver string) error
}

// Extension is notifications' part of the api over rs, receivers' URLs on the hosts
// allow allows (nil: none); rs nil: the feature is switched off, and a create or replace
// of a receiver answers 503 (the feed and what is stored are still read and deleted).
func Extension(rs Receivers, allow *egress.Allow) api.Extension {
	return api.Extension{Name: "notify", Mount: func(m *api.Mount) {
		r := routes{m: m, rs: rs, allow: allow}
		for _, coll := range []string{routeProjectReceivers, routeAdminReceivers} {
			m.Kind(api.KindDef[events.Receiver]{Name: model.KindNotificationReceiver, Root: true, Path: coll, Param: paramReceiver,
				Check: r.check, Changed: r.changed})
			m.Route(api.Doc{Method: http.MethodGet, Path: coll + "/:" + paramReceiver + "/status", Code: http.StatusOK,
				Response: reflect.TypeFor[status](), Summary: "A notification receiver's deliveries: counts, state, the last delivered event and the last errors"},
				r.status(coll+"/:"+paramReceiver))
		}
		m.Route(api.Doc{Method: http.MethodGet, Path: routeProjectEvents, Code: http.StatusOK, Response: reflect.TypeFor[[]events.Event](),
			Query: feedQuery, Summary: "The project's events, newest first"}, r.feed(false))
		m.Route(api.Doc{Method: http.MethodGet, Path: routeEvents, Code: http.StatusOK, Response: reflect.TypeFor[[]events.Event](),
			Query: feedQuery, Summary: "Every project's events and the fleet's, newest first (admins)"}, r.feed(true))
	}}
}

var feedQuery = []string{"limit", "before", "type"}

type routes struct {
	m     *api.Mount
	rs    Receivers
	allow *egress.Allow
}

// check validates a receiver and seals its URL and secret: a masked URL or secret in a
// replace keeps the stored one (answers show them masked).
func (r routes) check(_ context.Context, q *api.Request[events.Receiver]) error {
	if r.rs == nil {
		return api.Unavailable("this temco sends no notifications: feature notify is switched off (--disable-features)")
	}
	spec := &q.Resource().Spec
	keep, err := r.kept(q)
	if err != nil {
		return err
	}
	sealed := events.Sealed{URL: strings.TrimSpace(spec.URL), Secret: spec.Secret}
	if sealed.URL == "" || strings.Contains(sealed.URL, events.Mask) {
		if keep == nil {
			return api.BadRequest("spec.url is required: where temco posts the events")
		}
		// Only the stored URL's own mask keeps it: a masked URL on another scheme, host or
		// port would be answered 200 and not be where the events go.
		if sealed.URL != "" && sealed.URL != events.Masked(keep.URL) {
			return api.BadRequest("spec.url %q is masked but is not the stored URL's mask (%s): give the whole URL", sealed.URL, events.Masked(keep.URL))
		}
		sealed.URL = keep.URL
	}
	if sealed.Secret == events.Mask || sealed.Secret == "" && keep != nil && spec.Format != events.FormatSlack {
		if keep == nil {
			return api.BadRequest("spec.secret is the mask %q but no secret is stored to keep", events.Mask)
		}
		sealed.Secret = keep.Secret
	}
	spec.URL, spec.Secret = sealed.URL, sealed.Secret
	if err := spec.Check(events.ScopeOf(q.ID()), r.allow.AllowsURL); err != nil {
		if refused := (*events.HostRefused)(nil); errors.As(err, &refused) {
			return api.Forbidden("%v", err)
		}
		return api.BadRequest("%v", err)
	}
	plain, err := json.Marshal(sealed)
	if err != nil {
		return err
	}
	if err := q.SetSealed(plain); err != nil {
		return err
	}
	spec.URL = events.Masked(sealed.URL)
	if spec.Secret != "" {
		spec.Secret = events.Mask
	}
	return nil
}

// kept is what a replace's stored receiver has sealed (nil on a create).
func (r routes) kept(q *api.Request[events.Receiver]) (*events.Sealed, error) {
	if q.Old() == nil {
		return nil, nil
	}
	plain, err := q.OldSealed()
	if err != nil {
		return nil, err
	}
	var s events.Sealed
	if err := json.Unmarshal(plain, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// changed ends a deleted receiver's deliveries and forgets their status.
func (r routes) changed(ctx context.Context, id string) error {
	if ok, err := r.m.Store().Exists(ctx, id); err != nil || ok {
		return err
	}
	if r.rs != nil {
		if err := r.rs.StopDelivering(ctx, id); err != nil {
			r.m.Log().Warn("stop the deliveries of a deleted receiver; its next delivery finds it gone", "receiver", id, "error", err)
		}
	}
	return feed.OpenStatuses(r.m.Store().Database()).Forget(ctx, id)
}

// status answers GET .../notification-receivers/{name}/status.
type status struct {
	Name string `json:"name"`
	events.Status
}

func (r routes) status(route string) echo.HandlerFunc {
	return func(c echo.Context) error {
		d, err := r.m.Get(c, route)
		if err != nil {
			return err
		}
		st, err := feed.OpenStatuses(r.m.Store().Database()).Get(c.Request().Context(), d.ID)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, status{Name: d.Name, Status: st})
	}
}

// feed answers the events of the path's project, or (all) every one's.
func (r routes) feed(all bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := feed.Page{All: all, Limit: 100}
		if !all {
			id, err := r.m.PathID(c, "/projects/:project")
			if err != nil {
				return err
			}
			if err := r.m.MustExist(c.Request().Context(), id); err != nil {
				return err
			}
			p.Project = strings.TrimPrefix(id, "/projects/")
		}
		if v := c.QueryParam("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > feedCap {
				return api.BadRequest("limit=%q is invalid: use one whole number from 1 to %d", v, feedCap)
			}
			p.Limit = n
		}
		if v := c.QueryParam("before"); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return api.BadRequest("before=%q is invalid: use an RFC 3339 time, e.g. the time of the last event read", v)
			}
			p.Before = t
		}
		if v := c.QueryParam("type"); v != "" {
			p.Types = strings.Split(v, ",")
			for _, t := range p.Types {
				if !slices.Contains(events.Types, t) {
					return api.BadRequest("type=%q: %q is no event type (%s)", v, t, strings.Join(events.Types, ", "))
				}
			}
		}
		evs, err := feed.Open(r.m.Store().Database()).List(c.Request().Context(), p)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, evs)
	}
}
