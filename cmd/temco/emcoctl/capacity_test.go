package emcoctl

import (
	"bytes"
	"context"
	"testing"
)

// A capacity placement (temco's own resource) is applied as any resource below a DIG: its
// anchor is the collection, its spec sent as written.
func TestCapacityPlacementIsAnOrdinaryResource(t *testing.T) {
	const anchor = "projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1/capacity-placements"
	docs := load(t, `version: emco/v2
resourceContext:
  anchor: `+anchor+`
metadata:
  name: fleet
spec:
  eligible:
    clusters: [edge+c1, edge+c2, edge+c3]
  minClustersBelowCapacityCeiling: 1
  workloads:
  - app: web
    deployment: web
    hpa: web
  scaleIn:
    cooldown: 10m
    drain: {maxReplicas: 1}
`, nil)
	equal(t, "body", sent(docs), []string{anchor + ` {"metadata":{"name":"fleet"},"spec":{"eligible":{"clusters":["edge+c1","edge+c2","edge+c3"]},` +
		`"minClustersBelowCapacityCeiling":1,"scaleIn":{"cooldown":"10m","drain":{"maxReplicas":1}},` +
		`"workloads":[{"app":"web","deployment":"web","hpa":"web"}]}}`})

	api := newFakeAPI(t)
	var out bytes.Buffer
	r := api.runner(&out)
	ctx := context.Background()
	for _, run := range []func(context.Context, []*Document) error{r.Apply, r.Get, r.Delete} {
		if err := run(ctx, docs); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
	}
	equal(t, "requests", api.requests(), []string{"POST /v2/" + anchor, "GET /v2/" + anchor + "/fleet", "DELETE /v2/" + anchor + "/fleet"})
}
