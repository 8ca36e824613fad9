package emcoctl

import (
	"bytes"
	"context"
	"testing"
)

// A rollout strategy (temco's own resource) needs nothing of its own: its anchor is a
// collection below the DIG, addressed as anchor/name, and its spec is sent as written —
// shares as "N%" strings, durations as "5m" strings, counts as numbers.
func TestRolloutStrategyIsAnOrdinaryResource(t *testing.T) {
	const anchor = "projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1/rollout-strategies"
	docs := load(t, `version: emco/v2
resourceContext:
  anchor: `+anchor+`
metadata:
  name: rings
spec:
  stages:
  - name: canary
    clusters: [cluster1]
    before: [{type: approval}]
    progressDeadline: 5m
  - name: rest
    maxConcurrency: "50%"
    maxFailures: 2
  rollback: auto
`, nil)
	equal(t, "body", sent(docs), []string{anchor + ` {"metadata":{"name":"rings"},"spec":{"rollback":"auto","stages":[` +
		`{"before":[{"type":"approval"}],"clusters":["cluster1"],"name":"canary","progressDeadline":"5m"},` +
		`{"maxConcurrency":"50%","maxFailures":2,"name":"rest"}]}}`})

	api := newFakeAPI(t)
	var out bytes.Buffer
	r := api.runner(&out)
	ctx := context.Background()
	for _, run := range []func(context.Context, []*Document) error{r.Apply, r.Get, r.Update, r.Delete} {
		if err := run(ctx, docs); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
	}
	equal(t, "requests", api.requests(), []string{"POST /v2/" + anchor, "GET /v2/" + anchor + "/rings",
		"PUT /v2/" + anchor + "/rings", "DELETE /v2/" + anchor + "/rings"})
}
