package testenv

import (
	"slices"
	"strings"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`up`: "up",
		`max(temco_digs{namespace=~"$namespace", state!="a{b}"})`:                                                                                    "temco_digs",
		`histogram_quantile(0.9, sum by (le, operation) (rate(temco_operation_duration_seconds_bucket{namespace=~"$namespace"}[$__rate_interval])))`: "temco_operation_duration_seconds_bucket",
		`sum by (namespace) (rate(a_total{outcome="error"}[5m])) / sum without (x) (rate(b_total[5m] offset 1h)) > 0.05`:                             "a_total b_total",
		"x / on (job) group_left (pod) y and bool z unless count(w) or topk(3, v)":                                                                   "v w x y z",
		`rate(temco_x[5m:30s]) > ${threshold} and absent(temco_y{a='\'}'})`:                                                                          "temco_x temco_y",
		`max by (type) (temco_task_queue_pollers{namespace="platform"}) < 1`:                                                                         "temco_task_queue_pollers",
		`sum(increase(temco_operations_total[15m])) > 0`:                                                                                             "temco_operations_total",
	} {
		got, err := MetricNames(expr)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("MetricNames(%s) = %v, %v; want %s", expr, got, err, want)
		}
	}
	for _, bad := range []string{`sum(rate(x[5m])`, `x{a="b}`, `x}`, `sum(rate(1))`, `rate(x[5m)`} {
		if got, err := MetricNames(bad); err == nil {
			t.Errorf("MetricNames(%s) = %v, want an error", bad, got)
		}
	}
}

func TestUnexported(t *testing.T) {
	families := MetricFamilies("# HELP a_total A.\n# TYPE a_total counter\na_total 1\n# TYPE h_seconds histogram\n# TYPE s summary\n")
	got := Unexported([]string{"a_total", "h_seconds_bucket", "h_seconds_count", "s_sum", "s_bucket", "a_total_bucket", "bogus_total"}, families)
	if want := []string{"s_bucket", "a_total_bucket", "bogus_total"}; !slices.Equal(got, want) {
		t.Errorf("Unexported = %v, want %v", got, want)
	}
}
