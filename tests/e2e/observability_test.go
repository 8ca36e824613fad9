package e2e

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/testenv"
)

// Every metric the chart's dashboard and alerts query is one temco exports: the chart is
// rendered with both on, and each query's metric names are looked up among the families
// a running api and worker serve once an operation has run (a labelled series exists
// only once recorded: the operations', the SDK's task latencies, the cluster activities').
func TestDashboardsAndAlertsQueryExportedMetrics(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	d.operate("instantiate")
	d.await("Instantiated", time.Minute, "", func(s status) bool { return s.Status == "Instantiated" })

	dir, err := testenv.ChartDir()
	if err != nil {
		t.Fatal(err)
	}
	vals, err := testenv.ValuesFile("minimal-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vals["grafanaDashboard"], vals["prometheusRule"] = map[string]any{"enabled": true}, map[string]any{"enabled": true}
	objs, err := testenv.RenderChart(dir, "temco", "platform", vals)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := testenv.ChartQueries(objs)
	if err != nil {
		t.Fatal(err)
	}
	api := metricsOf(t, strings.TrimSuffix(apiURL, "/v2")+"/metrics")
	worker := metricsOf(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", stack.MetricsPort()))
	// The alerts' inputs say what is so: the worker polls, the instantiate succeeded.
	if !regexp.MustCompile(`(?m)^temco_task_queue_pollers\{type="activity"\} [1-9]`).MatchString(api) {
		t.Errorf("the api sees no worker polling: %s", grepLines(api, "temco_task_queue_pollers"))
	}
	if !regexp.MustCompile(`(?m)^temco_operations_total\{.*kind="dig",.*operation="instantiate",outcome="succeeded".*\} [1-9]`).MatchString(worker) {
		t.Errorf("the worker did not count the instantiate: %s", grepLines(worker, "temco_operations_total"))
	}
	families := testenv.MetricFamilies(api)
	maps.Copy(families, testenv.MetricFamilies(worker))
	checked := map[string]bool{}
	for _, where := range slices.Sorted(maps.Keys(queries)) {
		names, err := testenv.MetricNames(queries[where])
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		for _, n := range testenv.Unexported(names, families) {
			t.Errorf("%s queries %s, which neither the api nor the worker exports", where, n)
		}
		for _, n := range names {
			checked[n] = true
		}
	}
	t.Logf("%d queries, %d metrics checked: %s", len(queries), len(checked), strings.Join(slices.Sorted(maps.Keys(checked)), " "))
	d.operate("terminate")
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == "Terminated" })
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "; ")
}
