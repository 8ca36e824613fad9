// Package registry lists the intent controllers built into temco: the API mounts their
// resources, the worker runs them, placement resolves registrations to them.
package registry

import (
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/controllers/dtc/its"
	"github.com/temco/temco/controllers/dtc/nps"
	"github.com/temco/temco/controllers/dtc/sds"
	"github.com/temco/temco/controllers/dtc/swc"
	"github.com/temco/temco/controllers/gac"
	"github.com/temco/temco/controllers/hpa"
	"github.com/temco/temco/controllers/ovnaction"
	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/controllers/sfcclient"
	"github.com/temco/temco/controllers/tac"
)

// All is every built-in controller; adding one is one line here.
var All = []controllers.Builtin{
	gac.Controller,
	hpa.Placement,
	hpa.Action,
	ovnaction.Controller,
	sfc.Controller,
	sfcclient.Controller,
	dtc.Controller,
	its.Controller,
	sds.Controller,
	swc.Controller,
	nps.Controller,
	tac.Controller,
}
