package api

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/model"
)

// A resource's store _id is its REST path below /v2 with every parameter filled in,
// e.g. "/projects/p1/composite-apps/ca/v1". These helpers build and describe such ids.

// fill substitutes the ":param" segments of route with the request's validated values.
func fill(c echo.Context, route string) (string, error) {
	segs := strings.Split(route, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, ":") {
			continue
		}
		v := c.Param(s[1:])
		if err := model.ValidateName(s[1:]+" in the path", v); err != nil {
			return "", badRequest("%v", err)
		}
		segs[i] = v
	}
	return strings.Join(segs, "/"), nil
}

// parentOf returns the _id of the resource that owns collection path coll.
func parentOf(coll string) string {
	return coll[:strings.LastIndex(coll, "/")]
}

// scopeOf returns the top-level ancestor of id, e.g. "/projects/p1".
func scopeOf(id string) string {
	parts := strings.SplitN(id, "/", 4)
	if len(parts) < 3 {
		return id
	}
	return "/" + parts[1] + "/" + parts[2]
}

// labels names each collection segment's resource kind in messages.
var labels = map[string]string{
	"cluster-providers": "cluster provider", "clusters": "cluster", "labels": "cluster label",
	"kv-pairs": "kv pair", "clm-controllers": "clm controller", "controllers": "controller",
	"projects": "project", "composite-apps": "composite app", "apps": "app", "dependency": "app dependency",
	"composite-profiles": "composite profile", "profiles": "app profile",
	"deployment-intent-groups": "deployment intent group", "intents": "deployment intent",
	"generic-placement-intents": "generic placement intent", "app-intents": "app placement intent",
	"logical-clouds": "logical cloud", "cluster-references": "cluster reference", "user-permissions": "user permission",
	"cluster-quotas": "cluster quota", "dtc-controllers": "dtc controller", "cluster-sync-objects": "cluster sync object",
	"ca-certs": "CA certificate intent", "rollout-strategies": "rollout strategy",
	"capacity-placements": "capacity placement", "cluster-inventories": "cluster inventory",
}

// describe turns an _id into words for messages: `app "web" of composite app "ca" version "v1"`
// is shortened to the last resource: `app "web"`.
func describe(id string) string {
	segs := strings.Split(strings.TrimPrefix(id, "/"), "/")
	// Walk collection/name pairs; a composite app has an extra version segment.
	var last string
	for i := 0; i+1 < len(segs); i += 2 {
		label, ok := labels[segs[i]]
		if !ok {
			label = segs[i]
		}
		last = fmt.Sprintf("%s %q", label, segs[i+1])
		if segs[i] == "composite-apps" && i+2 < len(segs) {
			last += fmt.Sprintf(" version %q", segs[i+2])
			i++
		}
	}
	return last
}
