package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/dev/testenv"
)

// observed is the minimal install with the dashboard and the alerts on.
func observed(t *testing.T, dashboard, rule map[string]any) rendered {
	t.Helper()
	v := values(t, "minimal-values.yaml")
	v["grafanaDashboard"], v["prometheusRule"] = dashboard, rule
	return render(t, v)
}

// The dashboard is a ConfigMap Grafana's sidecar finds by its label, holding the chart's
// dashboards/temco.json; the label, more labels and the namespace are the values'.
func TestGrafanaDashboard(t *testing.T) {
	if r := render(t, values(t, "minimal-values.yaml")); r["ConfigMap/temco-dashboard"] != nil || r["PrometheusRule/temco"] != nil {
		t.Error("the dashboard or the alerts render by default")
	}
	r := observed(t, map[string]any{"enabled": true}, nil)
	cm := r["ConfigMap/temco-dashboard"]
	if cm == nil {
		t.Fatalf("no dashboard ConfigMap in %v", r.names())
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetNamespace() != "platform" {
		t.Errorf("dashboard labels %v, namespace %q", cm.GetLabels(), cm.GetNamespace())
	}
	root, _ := testenv.RepoRoot()
	file, err := os.ReadFile(filepath.Join(root, "deploy", "temco", "dashboards", "temco.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []any  `json:"panels"`
	}
	if got := str(cm.Object, "data", "temco.json"); got != strings.TrimSuffix(string(file), "\n") || json.Unmarshal([]byte(got), &dash) != nil ||
		dash.UID == "" || len(dash.Panels) == 0 {
		t.Errorf("the ConfigMap does not hold dashboards/temco.json: uid %q, %d panels", dash.UID, len(dash.Panels))
	}
	cm = observed(t, map[string]any{"enabled": true, "label": "dashboards", "labelValue": "temco", "namespace": "monitoring",
		"labels": map[string]any{"team": "platform"}}, nil)["ConfigMap/monitoring/temco-dashboard"]
	if cm == nil || cm.GetLabels()["dashboards"] != "temco" || cm.GetLabels()["team"] != "platform" || cm.GetLabels()["grafana_dashboard"] != "" {
		t.Errorf("dashboard with its own label and namespace: %v", cm)
	}
}

// Every alert selects the release namespace's series, takes its thresholds from the values,
// and carries a summary, a description and a runbook: a section of docs/observability.md.
func TestPrometheusRuleAlertsHaveRunbooks(t *testing.T) {
	r := observed(t, nil, map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"},
		"thresholds": map[string]any{"approvalWaitMinutes": 240}})
	rule := r["PrometheusRule/temco"]
	if rule == nil {
		t.Fatalf("no PrometheusRule in %v", r.names())
	}
	if rule.GetLabels()["release"] != "prometheus" {
		t.Errorf("PrometheusRule labels %v", rule.GetLabels())
	}
	root, _ := testenv.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)$`).FindAllStringSubmatch(string(doc), -1) {
		anchors[strings.ToLower(m[1])] = true
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	var alerts []string
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, x := range rules {
			a := x.(map[string]any)
			name, expr := a["alert"].(string), a["expr"].(string)
			alerts = append(alerts, name)
			if !strings.Contains(expr, `namespace="platform"`) {
				t.Errorf("%s does not select the release namespace: %s", name, expr)
			}
			if _, err := testenv.MetricNames(expr); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			for _, k := range []string{"summary", "description"} {
				if str(a, "annotations", k) == "" {
					t.Errorf("%s has no %s", name, k)
				}
			}
			url, anchor, _ := strings.Cut(str(a, "annotations", "runbook_url"), "#")
			if url != "https://github.com/temco/temco/blob/main/docs/observability.md" || !anchors[anchor] || anchor != strings.ToLower(name) {
				t.Errorf("%s: runbook_url %q is not its section of docs/observability.md", name, str(a, "annotations", "runbook_url"))
			}
			if name == "TemcoApprovalWaiting" && a["for"] != "240m" {
				t.Errorf("%s waits %v, want the value's 240m", name, a["for"])
			}
		}
	}
	if got := strings.Join(alerts, " "); got != "TemcoOperationsFailing TemcoApprovalWaiting TemcoClustersUnreachable TemcoWorkersDown TemcoStoreErrors" {
		t.Errorf("alerts %s", got)
	}
}

// The queries of the dashboard and the alerts scan: each names a metric (the e2e suite's
// TestDashboardsAndAlertsQueryExportedMetrics checks temco exports it).
func TestDashboardAndAlertQueriesScan(t *testing.T) {
	objs, err := testenv.RenderChart(chartDir(t), "temco", "platform", func() map[string]any {
		v := values(t, "minimal-values.yaml")
		v["grafanaDashboard"], v["prometheusRule"] = map[string]any{"enabled": true}, map[string]any{"enabled": true}
		return v
	}())
	if err != nil {
		t.Fatal(err)
	}
	queries, err := testenv.ChartQueries(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 20 {
		t.Errorf("%d queries found, want the dashboard's and the alerts'", len(queries))
	}
	for where, q := range queries {
		if _, err := testenv.MetricNames(q); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
}
