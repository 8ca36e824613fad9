package render

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// requireRefused checks that err fails the operation at once (a non-retryable InvalidInput)
// and says why.
func requireRefused(t *testing.T, err error, want string) {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != lifecycle.ErrInvalidInput {
		t.Fatalf("error %v: want a non-retryable %s", err, lifecycle.ErrInvalidInput)
	}
	if !strings.Contains(ae.Message(), want) {
		t.Fatalf("error %q: want it to say %q", ae.Message(), want)
	}
}

// renderBig renders app "big" from templates, with overrides.
func renderBig(templates map[string]string, overrides map[string]string) error {
	in := chartInput{app: "big", archive: testenv.Chart("big", "", templates), overrides: overrides, release: "r", namespace: "default"}
	_, err := (&Activities{}).renderApp(context.Background(), in, `app "big"`)
	return err
}

// A chart rendering more objects than an app may have fails, naming the limit.
func TestAnAppHasAtMostMaxObjects(t *testing.T) {
	many := map[string]string{"cm.yaml": "{{ range until (int .Values.n) }}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ . }}\n{{ end }}"}
	if err := renderBig(many, map[string]string{"n": strconv.Itoa(maxObjects)}); err != nil {
		t.Fatalf("%d objects: %v", maxObjects, err)
	}
	requireRefused(t, renderBig(many, map[string]string{"n": strconv.Itoa(maxObjects + 1)}),
		`app "big": chart big renders more than 5000 objects, the most an app may have`)
}

// An app's objects (their JSON, as stored) are at most maxObjectsBytes.
func TestAnAppsObjectsAreAtMostMaxObjectsBytes(t *testing.T) {
	big := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: {{ repeat (int .Values.n) \"x\" }}\n"}
	envelope := len(`{"apiVersion":"v1","data":{"a":""},"kind":"ConfigMap","metadata":{"name":"big"}}`)
	if err := renderBig(big, map[string]string{"n": strconv.Itoa(maxObjectsBytes - envelope)}); err != nil {
		t.Fatalf("objects of exactly the limit: %v", err)
	}
	requireRefused(t, renderBig(big, map[string]string{"n": strconv.Itoa(maxObjectsBytes - envelope + 1)}),
		"chart big renders objects of more than 6 MiB (as JSON), the most an app may have")
}

// The YAML Helm renders is at most maxManifestBytes, checked before it is parsed: here
// comments, which the objects do not keep.
func TestAnAppsManifestsAreAtMostMaxManifestBytes(t *testing.T) {
	commented := map[string]string{"cm.yaml": "# {{ repeat (int .Values.n) \"x\" }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"}
	if err := renderBig(commented, map[string]string{"n": strconv.Itoa(maxManifestBytes - 1024)}); err != nil {
		t.Fatalf("1 KiB below the limit (for Helm's headers): %v", err)
	}
	requireRefused(t, renderBig(commented, map[string]string{"n": strconv.Itoa(maxManifestBytes)}),
		"bytes of manifests, more than the 12 MiB an app may have")
}

// A chart that renders for longer than the timeout fails then, not when the activity
// times out to be retried. (Helm cannot be stopped: the rendering ends in the background.)
func TestAChartRendersWithinTheTimeout(t *testing.T) {
	loop := testenv.Chart("loop", "", map[string]string{"cm.yaml": "{{- range until 1500 }}{{- range until 1500 }}{{- end }}{{- end }}\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loop\n"})
	in := chartInput{app: "loop", archive: loop, release: "r", namespace: "default"}
	ctx := context.Background()
	start := time.Now()
	_, err := renderWithin(ctx, in, 20*time.Millisecond)
	requireRefused(t, renderFailure(ctx, `app "loop"`, err), `app "loop": the chart did not render within 20ms, the most a chart may take`)
	if took := time.Since(start); took > time.Second {
		t.Errorf("failed after %v, not at the timeout", took)
	}
	if r, err := renderWithin(ctx, in, time.Minute); err != nil || len(r.objects) != 1 {
		t.Fatalf("within a minute: %v", err)
	}
	if renderTimeout < time.Minute {
		t.Errorf("renderTimeout %v: real charts need up to seconds on a busy worker", renderTimeout)
	}
}

// A cancelled activity is not the user's fault: its error is not a refusal.
func TestACancelledRenderingIsNotARefusal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&Activities{}).renderApp(ctx, chartInput{app: "web", archive: webChart, release: "r"}, `app "web"`)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want the context's", err)
	}
}

// Helm refuses an override's list index past strvals.MaxIndex; temco relies on it, and
// bounds the indices of all of an app's overrides together, which Helm does not.
func TestOverrideListIndicesAreBounded(t *testing.T) {
	if strvals.MaxIndex != 65536 {
		t.Fatalf("Helm's strvals.MaxIndex is %d: review maxOverrideIndices", strvals.MaxIndex)
	}
	if err := strvals.ParseInto("a[65537]=x", map[string]any{}); err == nil {
		t.Fatal("Helm took an index past its maximum")
	}
	cm := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: {{ len .Values.a | quote }}\n"}
	for _, ok := range []map[string]string{
		{"a[65536]": "x"},                  // Helm's maximum, once
		{"a[40000]": "x", "b[25536]": "y"}, // the limit, in all
	} {
		if err := renderBig(cm, ok); err != nil {
			t.Errorf("overrides %v: %v", ok, err)
		}
	}
	for _, over := range []map[string]string{
		{"a[40000]": "x", "b[25537]": "y"},
		{"a[1]": "x,b[70000]=y"}, // more keys, set after a comma as with --set
		{"a[99999999999999999999]": "x"},
	} {
		requireRefused(t, renderBig(cm, over), "the list indices of the override values add up to more than 65536, the most an app's may")
	}
	var thousands = map[string]string{} // each at Helm's maximum: 1 MiB of list each
	for i := range 1000 {
		thousands[fmt.Sprintf("l%d[65536]", i)] = "x"
	}
	requireRefused(t, renderBig(cm, thousands), "add up to more than 65536")
}
