package flow

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/core/lifecycle"
)

// probes stands for the activities: 5 clusters, in pages.
type probes struct {
	pages  []ProbePage
	rounds []time.Time
}

func (p *probes) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	keys := []string{"cp+a", "cp+b", "cp+c", "cp+d", "cp+e"}
	lifecycle.Register(env, ProbeClusters, func(_ context.Context, in ProbePage) (ProbedPage, error) {
		p.pages = append(p.pages, in)
		i := 0
		for i < len(keys) && keys[i] <= in.After {
			i++
		}
		page := keys[i:min(i+in.Limit, len(keys))]
		if len(page) == 0 {
			return ProbedPage{}, nil
		}
		return ProbedPage{Last: page[len(page)-1], States: map[string]int{"Reachable": len(page)}}, nil
	})
	lifecycle.RegisterNoResult(env, RecordProbeRound, func(_ context.Context, started time.Time) error {
		p.rounds = append(p.rounds, started)
		return nil
	})
	return env
}

// Each round asks page after page until one is empty, then records the round; rounds
// follow at the interval; a wake starts one at once, with the pace it carries; stop ends.
func TestRoundsProbeEveryPageThenRecordTheRound(t *testing.T) {
	p := &probes{}
	env := p.env(t)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(lifecycle.SignalWake, HealthInput{Interval: time.Hour, PageSize: 5})
	}, 90*time.Second) // during the second round's wait
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 2*time.Hour)
	env.ExecuteWorkflow(ClusterHealth, HealthInput{Interval: time.Minute, PageSize: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// Rounds at 0 and 1 min (pages of 2: after "", a+b, c+d, e), the wake's at 1.5 min and
	// the next an hour on (pages of 5: after "", e); stopped at 2 h.
	var afters []string
	for _, pg := range p.pages {
		afters = append(afters, pg.After)
	}
	want := []string{"", "cp+b", "cp+d", "cp+e", "", "cp+b", "cp+d", "cp+e", "", "cp+e", "", "cp+e"}
	if len(afters) != len(want) {
		t.Fatalf("pages after %q, want %q", afters, want)
	}
	for i := range want {
		if afters[i] != want[i] {
			t.Fatalf("pages after %q, want %q", afters, want)
		}
	}
	if len(p.rounds) != 4 {
		t.Errorf("rounds recorded %v, want 4", p.rounds)
	}
	if !env.IsWorkflowCompleted() {
		t.Error("not completed after the stop")
	}
}
