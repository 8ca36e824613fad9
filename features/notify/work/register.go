package work

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/notify/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers the delivery activity on r.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := NewActivities(d.Store, d.Keys, d.NotifyHosts)
	lifecycle.Register(r, flow.DeliverEvent, a.DeliverEvent)
}
