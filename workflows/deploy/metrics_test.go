package deploy

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/core/lifecycle"
)

// metricsRecorder is a metrics handler keeping what temco's own metrics recorded, each as
// "name{tag=value,...}" (the SDK's tags left out).
type metricsRecorder struct {
	tags map[string]string
	mu   *sync.Mutex
	got  *[]string
}

func newMetricsRecorder() metricsRecorder {
	return metricsRecorder{mu: &sync.Mutex{}, got: &[]string{}}
}

func (r metricsRecorder) WithTags(tags map[string]string) client.MetricsHandler {
	merged := maps.Clone(r.tags)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, tags)
	return metricsRecorder{tags: merged, mu: r.mu, got: r.got}
}

func (r metricsRecorder) note(name string) {
	if name != lifecycle.MetricOperations && name != lifecycle.MetricOperationDuration {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.got = append(*r.got, fmt.Sprintf("%s{kind=%s,operation=%s,outcome=%s}", name, r.tags["kind"], r.tags["operation"], r.tags["outcome"]))
}

func (r metricsRecorder) Counter(name string) client.MetricsCounter {
	return counterFunc(func(int64) { r.note(name) })
}
func (r metricsRecorder) Gauge(name string) client.MetricsGauge {
	return gaugeFunc(func(float64) { r.note(name) })
}
func (r metricsRecorder) Timer(name string) client.MetricsTimer {
	return timerFunc(func(time.Duration) { r.note(name) })
}

type counterFunc func(int64)

func (f counterFunc) Inc(n int64) { f(n) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(x float64) { f(x) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

// An ended operation is counted and timed once, by kind, operation and outcome.
func TestAnEndedOperationIsCountedOnce(t *testing.T) {
	for name, c := range map[string]struct {
		render  func() error
		outcome string
	}{
		"succeeded": {nil, lifecycle.OutcomeSucceeded},
		"failed": {func() error {
			return temporal.NewNonRetryableApplicationError("bad chart", lifecycle.ErrInvalidInput, nil)
		}, lifecycle.OutcomeFailed},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakes()
			if c.render != nil {
				f.render = c.render
			}
			rec := newMetricsRecorder()
			var s testsuite.WorkflowTestSuite
			s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
			s.SetMetricsHandler(rec)
			env := s.NewTestWorkflowEnvironment()
			f.register(env)
			env.ExecuteWorkflow(Instantiate, opInput)
			if !env.IsWorkflowCompleted() {
				t.Fatal("workflow did not complete")
			}
			tags := "{kind=dig,operation=instantiate,outcome=" + c.outcome + "}"
			want := []string{lifecycle.MetricOperationDuration + tags, lifecycle.MetricOperations + tags}
			if got := slices.Sorted(slices.Values(*rec.got)); !slices.Equal(got, want) {
				t.Errorf("recorded %v, want %v", got, want)
			}
		})
	}
}
