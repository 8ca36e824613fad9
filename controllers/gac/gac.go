// Package gac is EMCO's generic action controller: a DIG's generic-k8s-intents add new
// objects (any kind, ConfigMaps and Secrets from files) to an app's clusters, or patch the
// app's own objects, per cluster.
//
// A resource names the object and its app; it acts only through its customizations, each
// of which picks the app's clusters (all, or by cluster label or name) and gives data
// files and a JSON or strategic merge patch. Where temco departs from EMCO, the code
// says so: several customizations of one new object make one object per cluster with all
// of them applied, a cluster-specific customization also matches the cluster's provider,
// and a $(URL)$ patch value is read from temco's store when it names the kv-pairs route
// (of the deployment's own clusters only), else fetched only from a host an admin allowed
// (url.go, fetch.go).
package gac

import (
	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/model"
)

// Stored kinds.
const (
	KindIntent        = "gac-intent"
	KindResource      = "gac-resource"
	KindCustomization = "gac-customization"
)

// Routes below the DIG, with EMCO's path parameter names.
const (
	intentsPath        = "/generic-k8s-intents"
	resourcesPath      = intentsPath + "/:genericK8sIntent/resources"
	customizationsPath = resourcesPath + "/:genericResource/customizations"
)

// Controller is gac as built into temco. EMCO deploys it as service gac (Helm) or
// genericactioncontroller (docker compose).
var Controller = controllers.Builtin{
	Name:  "gac",
	Type:  contract.TypeAction,
	Hosts: []string{"gac", "genericactioncontroller"},
	Kinds: []api.ResourceKind{
		api.DIGKind(api.KindDef[model.Empty]{Name: KindIntent, Path: intentsPath, Param: "genericK8sIntent"}),
		api.DIGKind(api.KindDef[ResourceSpec]{Name: KindResource, Path: resourcesPath, Param: "genericResource",
			Multipart: true, Check: checkResource}),
		api.DIGKind(api.KindDef[CustomizationSpec]{Name: KindCustomization, Path: customizationsPath, Param: "customization",
			Multipart: true, Check: checkCustomization}),
	},
	New: func(d controllers.Deps) contract.Controller { return &controller{store: d.Store, keys: d.Keys} },
}
