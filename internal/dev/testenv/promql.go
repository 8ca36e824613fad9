package testenv

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The chart's dashboards and alerts are checked against what temco exports. Prometheus'
// own parser (github.com/prometheus/prometheus/promql/parser) would bring that whole
// module and its storage packages into go.mod for tests alone; the queries need only
// their metric names, which this scanner finds: every identifier outside label matchers,
// strings, ranges and label lists that is neither a function, an aggregation nor a
// keyword.

// ChartQueries returns the PromQL queries of rendered objects, keyed by where each is:
// the targets and label_values variables of the Grafana dashboards in ConfigMaps (JSON
// data) and the rules of PrometheusRules.
func ChartQueries(objs []*unstructured.Unstructured) (map[string]string, error) {
	out := map[string]string{}
	for _, o := range objs {
		where := o.GetKind() + "/" + o.GetName()
		switch o.GetKind() {
		case "ConfigMap":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for key, text := range data {
				if !strings.HasSuffix(key, ".json") {
					continue
				}
				var dash dashboard
				if err := json.Unmarshal([]byte(text), &dash); err != nil {
					return nil, fmt.Errorf("%s %s: %w", where, key, err)
				}
				dash.queries(where+" "+key, out)
			}
		case "PrometheusRule":
			groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
			for _, g := range groups {
				g, _ := g.(map[string]any)
				rules, _ := g["rules"].([]any)
				for i, r := range rules {
					r, _ := r.(map[string]any)
					name, _ := r["alert"].(string)
					if name == "" {
						name, _ = r["record"].(string)
					}
					expr, _ := r["expr"].(string)
					out[fmt.Sprintf("%s %v/%d %s", where, g["name"], i, name)] = expr
				}
			}
		}
	}
	return out, nil
}

// dashboard is what ChartQueries reads of a Grafana dashboard.
type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// labelValues is a Grafana variable's query of a metric's label values.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

func (d dashboard) queries(where string, out map[string]string) {
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out[fmt.Sprintf("%s panel %q %s", where, p.Title, t.RefID)] = t.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) != nil {
			_ = json.Unmarshal(v.Query, &q.Query) // an older dashboard's plain string
		}
		if m := labelValues.FindStringSubmatch(q.Query); m != nil {
			out[fmt.Sprintf("%s variable %s", where, v.Name)] = m[1]
		}
	}
}

// promqlWords are PromQL's aggregations and keywords: never metric names.
var promqlWords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true,
}

// labelLists are the keywords a parenthesised list of label names follows.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// MetricNames returns the metric names expr selects, sorted; an error for an expression
// it cannot scan (an unterminated string, unbalanced brackets) or one that selects none.
func MetricNames(expr string) ([]string, error) {
	sc := scanner{expr: expr, names: map[string]bool{}}
	for i := 0; i < len(expr); {
		next, err := sc.token(i)
		if err != nil {
			return nil, err
		}
		i = next
	}
	if sc.parens > 0 {
		return nil, fmt.Errorf("%q: ( is not closed", expr)
	}
	if len(sc.names) == 0 {
		return nil, fmt.Errorf("%q selects no metric", expr)
	}
	return slices.Sorted(maps.Keys(sc.names)), nil
}

// scanner finds the metric names of a PromQL expression.
type scanner struct {
	expr   string
	names  map[string]bool
	parens int // open
}

func isIdent(c byte, first bool) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

// token scans the token at i and returns the index after it.
func (sc *scanner) token(i int) (int, error) {
	expr := sc.expr
	switch c := expr[i]; {
	case c == '"' || c == '\'' || c == '`':
		return skipString(expr, i)
	case c == '{' || c == '[': // label matchers, a range or a subquery
		return sc.skipTo(i, c, map[byte]byte{'{': '}', '[': ']'}[c])
	case c == '$': // a Grafana variable: $name or ${name}
		i++
		if i < len(expr) && expr[i] == '{' {
			return sc.skipTo(i, '{', '}')
		}
		for i < len(expr) && isIdent(expr[i], false) {
			i++
		}
		return i, nil
	case c >= '0' && c <= '9' || c == '.': // a number or a duration
		for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
			i++
		}
		return i, nil
	case isIdent(c, true):
		return sc.word(i)
	case c == '(':
		sc.parens++
	case c == ')':
		if sc.parens--; sc.parens < 0 {
			return 0, fmt.Errorf("%q: ) at %d closes nothing", expr, i)
		}
	case c == '}' || c == ']':
		return 0, fmt.Errorf("%q: %c at %d closes nothing", expr, c, i)
	}
	return i + 1, nil
}

// word scans the identifier at i: a metric name unless a keyword, an aggregation or a
// function; the label list after by, on... is skipped.
func (sc *scanner) word(i int) (int, error) {
	expr, start := sc.expr, i
	for i < len(expr) && isIdent(expr[i], false) {
		i++
	}
	w, next := strings.ToLower(expr[start:i]), i
	for next < len(expr) && strings.IndexByte(" \t\r\n", expr[next]) >= 0 {
		next++
	}
	call := next < len(expr) && expr[next] == '('
	switch {
	case labelLists[w] && call:
		return sc.skipTo(next, '(', ')')
	case promqlWords[w] || call: // a function's ( is scanned next
	default:
		sc.names[expr[start:i]] = true
	}
	return i, nil
}

// skipTo returns the index after the bracket closing the one at i, strings skipped.
func (sc *scanner) skipTo(i int, open, close byte) (int, error) {
	depth := 0
	for j := i; j < len(sc.expr); j++ {
		switch c := sc.expr[j]; {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(sc.expr, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case c == open:
			depth++
		case c == close:
			if depth--; depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("%q: %c at %d is not closed", sc.expr, open, i)
}

// skipString returns the index after the string starting at i.
func skipString(expr string, i int) (int, error) {
	quote := expr[i]
	for j := i + 1; j < len(expr); j++ {
		switch expr[j] {
		case '\\':
			if quote != '`' {
				j++
			}
		case quote:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("%q: string at %d is not closed", expr, i)
}

// MetricFamilies returns the families a /metrics answer (Prometheus' text format)
// declares, with their types.
func MetricFamilies(text string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(text) {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// Unexported returns the names not among families: a histogram's or summary's series
// (_bucket, _sum, _count) count as their family's.
func Unexported(names []string, families map[string]string) []string {
	var out []string
	for _, n := range names {
		if _, ok := families[n]; ok {
			continue
		}
		found := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok {
				t := families[base]
				found = found || t == "histogram" || (t == "summary" && suffix != "_bucket")
			}
		}
		if !found {
			out = append(out, n)
		}
	}
	return out
}
