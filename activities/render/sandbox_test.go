package render

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/profile"
	"github.com/temco/temco/internal/adapters/sandbox"
	"github.com/temco/temco/internal/core/capabilities"
	"github.com/temco/temco/internal/dev/testenv"
)

// TestMain lets this test binary be the sandbox's child, as the worker's binary is.
func TestMain(m *testing.M) {
	sandbox.ChildMain(SandboxJob)
	os.Exit(m.Run())
}

// testSandbox runs the test binary itself as the child.
func testSandbox(t *testing.T) *Activities {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Activities{Sandbox: &Sandbox{Exe: exe, Memory: 512 << 20}}
}

// A chart renders to the same objects in the sandbox as in the worker itself: profile,
// overrides, labels and capabilities all reach the child.
func TestSandboxRendersAsInProcess(t *testing.T) {
	p, err := profile.Parse(testenv.Profile("message: profile\nreplicas: 2\nbig: 12345678901\n"))
	if err != nil {
		t.Fatal(err)
	}
	caps := &capabilities.Capabilities{KubeVersion: "v1.35.4", APIVersions: []string{"v1", "example.com/v1"}}
	in := chartInput{app: "web", archive: webChart, profile: p, overrides: map[string]string{"replicas": "5"},
		release: "r1", namespace: "default", labels: map[string]string{"l": "v"}, caps: caps}
	want, err := render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := testSandbox(t).renderApp(context.Background(), in, `app "web"`)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.objects, want.objects) || got.readsCapabilities != want.readsCapabilities || len(got.objects) != 5 {
		t.Fatalf("sandbox rendered %+v; in process %+v", got, want)
	}
}

// A chart that takes more memory than a rendering may fails with that reason, at once,
// and the worker (this process) goes on.
func TestSandboxRefusesAChartOverItsMemory(t *testing.T) {
	bomb := testenv.Chart("bomb", "", map[string]string{
		"cm.yaml": `{{ $s := "xxxxxxxx" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}apiVersion: v1
kind: ConfigMap
metadata:
  name: c
data:
  n: {{ len $s | quote }}
`})
	_, err := testSandbox(t).renderApp(context.Background(), chartInput{app: "bomb", archive: bomb, release: "r"}, `app "bomb"`)
	requireRefused(t, err, `app "bomb": the chart needs more than 512 MiB of memory to render, the most a chart may take`)
}

// A chart that never ends is stopped at the timeout, its process killed: no rendering
// goes on burning a core after its activity gave up.
func TestSandboxKillsAChartPastItsTimeout(t *testing.T) {
	loop := testenv.Chart("loop", "", map[string]string{
		"cm.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	a := testSandbox(t)
	_, err := a.Sandbox.render(context.Background(), chartInput{app: "loop", archive: loop, release: "r"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "the chart did not render within 1s") {
		t.Fatalf("error %v: want the timeout", err)
	}
	if kids, err := testenv.Children(os.Getpid()); err != nil || len(kids) > 0 {
		t.Fatalf("child processes %v left behind (%v)", kids, err)
	}
}

// The child's refusals come back as the chart's fault, with the child's words.
func TestSandboxReturnsTheChartsErrors(t *testing.T) {
	broken := testenv.Chart("x", "", map[string]string{"a.yaml": "{{ .Values.missing.field }}"})
	_, err := testSandbox(t).renderApp(context.Background(), chartInput{app: "x", archive: broken, release: "r"}, `app "x"`)
	requireRefused(t, err, `app "x": render chart x`)
}

// A sandbox that cannot run is retried, never blamed on the chart.
func TestSandboxFaultIsRetried(t *testing.T) {
	a := &Activities{Sandbox: &Sandbox{Exe: "/nonexistent/temco"}}
	_, err := a.renderApp(context.Background(), chartInput{app: "web", archive: webChart, release: "r"}, `app "web"`)
	if err == nil || !errors.As(err, new(sandboxFault)) {
		t.Fatalf("error %v: want a sandbox fault, retryable", err)
	}
}

// The sandbox's cost: a process started, the chart sent and the objects read back, against
// the same rendering in the worker's own process, and in a spare child started before.
// bench: the chart of an app ("web": five objects) and, when .bin/charts has it, kueue (78
// objects, 0.9 MB).
func BenchmarkSandbox(b *testing.B) {
	charts := map[string]chartInput{"web": {app: "web", archive: webChart, release: "r", namespace: "default"}}
	if dir, err := testenv.RepoRoot(); err == nil {
		if tgz, err := testenv.PackChart(dir+"/.bin/charts/kueue", "kueue"); err == nil {
			charts["kueue"] = chartInput{app: "kueue", archive: tgz, release: "r", namespace: "default"}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	sb := &Sandbox{Exe: exe}
	for name, in := range charts {
		b.Run(name+"/in-process", func(b *testing.B) {
			for b.Loop() {
				if _, err := render(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/sandbox", func(b *testing.B) {
			for b.Loop() {
				if _, err := sb.render(context.Background(), in, time.Minute); err != nil {
					b.Fatal(err)
				}
			}
		})
		// As the worker renders: a spare child waits, started in a quiet second after
		// the rendering before (the pause is the benchmark's pacing, not timed).
		spare := &Sandbox{Exe: exe, Spares: 1}
		b.Run(name+"/sandbox-spare", func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				time.Sleep(1500 * time.Millisecond)
				b.StartTimer()
				if _, err := spare.render(context.Background(), in, time.Minute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
