package traces

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiclient "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// One instantiate is one trace: the api's span of the request, the Instantiate workflow
// it started through the DIG's lifecycle workflow, its rendering and placement, and an
// apply span for every cluster the app was placed on, all under one trace id, read back
// from the collector.
func TestAnInstantiateIsOneTraceFromTheRequestToEveryClustersApply(t *testing.T) {
	ctx := context.Background()
	dig := deployOnEveryCluster(t, ctx)
	from := time.Now()
	if _, err := api.Operate(ctx, dig, apiclient.OpInstantiate, nil); err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, dig, lifecycle.StatusInstantiated)

	var trace []span
	poll.Until(t, "the instantiate's trace, whole, in Jaeger", 2*time.Minute, func(ctx context.Context) error {
		traces, err := tracesOfInstantiate(ctx, from)
		if err != nil {
			return err
		}
		if len(traces) != 1 {
			return fmt.Errorf("%d traces hold the instantiate request, want 1", len(traces))
		}
		trace = traces[0]
		return missing(trace)
	})
	for _, s := range trace {
		t.Logf("%s %-28s %s", s.Service, s.Name, s.Attrs)
	}
	t.Run("in the stack's trace viewer", func(t *testing.T) { viewTrace(t, trace[0].TraceID) })
}

// The spans the trace must hold, by service and name; the clusters' applies by cluster.
func missing(trace []span) error {
	want := []struct{ service, name string }{
		{"temco-api", "POST /v2/projects/:project/composite-apps/:compositeApp/:version/deployment-intent-groups/:deploymentIntentGroup/instantiate"},
		{"temco-api", "UpdateWithStartWorkflow:" + lifecycle.UpdateOperate},
		{"temco-worker", "HandleUpdate:" + lifecycle.UpdateOperate},
		{"temco-worker", "RunWorkflow:" + lifecycle.WorkflowInstantiate},
		{"temco-worker", "RunActivity:" + lifecycle.RenderApps.Name()},
		{"temco-worker", "RunActivity:" + lifecycle.PlaceApps.Name()},
	}
	var lacking []string
	for _, w := range want {
		if !slices.ContainsFunc(trace, func(s span) bool { return s.Service == w.service && s.Name == w.name }) {
			lacking = append(lacking, w.service+" "+w.name)
		}
	}
	for _, c := range stack.Clusters {
		key := "local+" + c.Name
		if !slices.ContainsFunc(trace, func(s span) bool {
			return s.Name == "cluster.apply" && s.Attrs["temco.cluster"] == key && s.Attrs["temco.objects"] == "1"
		}) {
			lacking = append(lacking, "cluster.apply of "+key+" with its 1 object")
		}
	}
	if len(lacking) > 0 {
		return fmt.Errorf("%d of %d spans, lacking %s", len(trace), len(want)+len(stack.Clusters), strings.Join(lacking, ", "))
	}
	return nil
}

// deployOnEveryCluster registers the stack's clusters, and a DIG of one app (a
// ConfigMap) placed on both by label, approved; it returns the DIG's path.
func deployOnEveryCluster(t *testing.T, ctx context.Context) string {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	res := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
	}
	must(api.Create(ctx, "/cluster-providers", res("local", nil)))
	lc := "/projects/p1/logical-clouds/default"
	must(api.Create(ctx, "/projects", res("p1", nil)))
	must(api.Create(ctx, "/projects/p1/logical-clouds", res("default", map[string]any{"level": "0"})))
	for _, c := range stack.Clusters {
		kubeconfig, err := os.ReadFile(c.Kubeconfig())
		must(err)
		must(api.Create(ctx, "/cluster-providers/local/clusters", res(c.Name, nil), apiclient.File{Data: kubeconfig}))
		must(api.Create(ctx, "/cluster-providers/local/clusters/"+c.Name+"/labels", map[string]string{"clusterLabel": "edge"}))
		must(api.Create(ctx, lc+"/cluster-references", res(c.Name, map[string]any{"clusterProvider": "local", "cluster": c.Name})))
	}
	_, err := api.Operate(ctx, lc, apiclient.OpInstantiate, nil)
	must(err)
	awaitStatus(t, lc, lifecycle.StatusInstantiated)

	ca := "/projects/p1/composite-apps/shop/v1"
	must(api.Create(ctx, "/projects/p1/composite-apps", res("shop", map[string]any{"compositeAppVersion": "v1"})))
	chart := testenv.Chart("web", "message: hello\n", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\n" +
		"metadata:\n  name: web-config\ndata:\n  message: {{ .Values.message | quote }}\n"})
	must(api.Create(ctx, ca+"/apps", res("web", nil), apiclient.File{Data: chart}))
	must(api.Create(ctx, ca+"/composite-profiles", res("prof", nil)))
	must(api.Create(ctx, ca+"/composite-profiles/prof/profiles", res("web-profile", map[string]any{"app": "web"}),
		apiclient.File{Data: testenv.Profile("message: traced\n")}))
	dig := ca + "/deployment-intent-groups/dig"
	must(api.Create(ctx, ca+"/deployment-intent-groups", res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "default"})))
	must(api.Create(ctx, dig+"/generic-placement-intents", res("gpi", nil)))
	must(api.Create(ctx, dig+"/generic-placement-intents/gpi/app-intents", res("web", map[string]any{"app": "web",
		"intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": "local", "clusterLabel": "edge"}}}})))
	must(api.Create(ctx, dig+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})))
	_, err = api.Operate(ctx, dig, apiclient.OpApprove, nil)
	must(err)
	return dig
}

// awaitStatus waits until the lifecycle target at path has status want.
func awaitStatus(t *testing.T, path, want string) {
	t.Helper()
	poll.Until(t, path+" "+want, 2*time.Minute, func(ctx context.Context) error {
		s, err := api.Status(ctx, path)
		if err != nil {
			return err
		}
		if s.DeployedStatus != want {
			return fmt.Errorf("%s (%s)", s.DeployedStatus, s.Error)
		}
		return nil
	})
}

// span is what the test reads of a span: its process's service, its name and its
// attributes (values as text).
type span struct {
	TraceID, Service, Name string
	Attrs                  map[string]string
}

// tracesOfInstantiate asks Jaeger (its API v3) for the traces of temco api since from
// whose request span is an instantiate's, each whole, as lists of spans.
func tracesOfInstantiate(ctx context.Context, from time.Time) ([][]span, error) {
	q := url.Values{"query.service_name": {"temco-api"}, "query.num_traces": {"1000"},
		"query.start_time_min": {from.Add(-time.Second).UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)}}
	spans, err := querySpans(ctx, stack.Jaeger.QueryURL()+"/api/v3/traces?"+q.Encode())
	if err != nil {
		return nil, err
	}
	byTrace := map[string][]span{}
	for _, s := range spans {
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	var out [][]span
	for _, trace := range byTrace {
		if slices.ContainsFunc(trace, func(s span) bool {
			return s.Service == "temco-api" && strings.HasPrefix(s.Name, "POST ") && strings.HasSuffix(s.Name, "/deployment-intent-groups/:deploymentIntentGroup/instantiate")
		}) {
			out = append(out, trace)
		}
	}
	return out, nil
}

// querySpans reads an answer of Jaeger's API v3: OTLP's JSON (resource spans), under
// "result"; a search that finds nothing is a 404.
func querySpans(ctx context.Context, u string) ([]span, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var answer struct {
		Result struct {
			ResourceSpans []struct {
				Resource   struct{ Attributes []attribute } `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID    string      `json:"traceId"`
						Name       string      `json:"name"`
						Attributes []attribute `json:"attributes"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	var out []span
	for _, rs := range answer.Result.ResourceSpans {
		service := attributes(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out = append(out, span{TraceID: s.TraceID, Service: service, Name: s.Name, Attrs: attributes(s.Attributes)})
			}
		}
	}
	return out, nil
}

// attribute is an OTLP attribute in JSON: a string, an integer (as a string) or a bool.
type attribute struct {
	Key   string `json:"key"`
	Value struct {
		String *string `json:"stringValue"`
		Int    *string `json:"intValue"`
		Bool   *bool   `json:"boolValue"`
	} `json:"value"`
}

func attributes(list []attribute) map[string]string {
	m := map[string]string{}
	for _, a := range list {
		switch v := a.Value; {
		case v.String != nil:
			m[a.Key] = *v.String
		case v.Int != nil:
			m[a.Key] = *v.Int
		case v.Bool != nil:
			m[a.Key] = strconv.FormatBool(*v.Bool)
		}
	}
	return m
}
