// Package work holds the policy controller's activities (features/policy/flow): an agent's
// event stream, a policy intent's evaluation (temco's embedded engine or an allowed OPA
// server), the workflow a decision starts and the decision's record.
package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/policy"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Activities are the policy controller's activities.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	// Signal hands an event to a DIG's Policy workflow (signalEvent, register.go).
	Signal func(ctx context.Context, dig lifecycle.Target, ev flow.PolicyEvent) error
	// Engines are the OPA servers a policy intent may name (nil: none; the embedded
	// engine needs none).
	Engines *egress.Allow
	// OwnQueue is temco's task queue, where no decision starts anything but Relocate.
	OwnQueue string
	// Sandbox evaluates embedded policies in child processes (nil: in this one, for tests).
	Sandbox *policyengine.Sandbox
	// Grants are the task queues an admin granted projects (TEMCO_WORKFLOW_TASK_QUEUES):
	// a decision starts a workflow only on its DIG's project's queues.
	Grants map[string][]string
	// Keys open an agent's sealed token.
	Keys *seal.Keyring
	// Events raises the decisions that asked for action (nil: none).
	Events *feed.Emitter
}

// MaxPayloadBytes bounds an event's metric list handed to a policy: each one goes into a
// workflow's history.
const MaxPayloadBytes = 64 << 10

// statusEvery is how often a listener records its agent's status while events flow.
const statusEvery = 10 * time.Second

// ListenPolicyAgent holds the agent's event stream open until the attempt's deadline
// (less a minute: the workflow then opens a new one) and hands every event to the
// Policy workflow of the DIG whose context it names, once per matching policy intent,
// when that DIG has apps on the agent's clusters (binding.go). It returns an error when
// the agent cannot be reached or ends the stream (the workflow retries), and Gone when
// the agent is deregistered.
func (a *Activities) ListenPolicyAgent(ctx context.Context, in flow.PolicyAgentInput) (flow.PolicyListened, error) {
	l, err := a.listener(ctx, in)
	if err != nil || l == nil {
		return flow.PolicyListened{Gone: l == nil && err == nil}, err
	}
	if err := l.prepare(); err != nil {
		l.failed(err.Error())
		l.record(ctx, true)
		return flow.PolicyListened{}, err
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		var stop context.CancelFunc
		lctx, stop = context.WithDeadline(lctx, dl.Add(-time.Minute))
		defer stop()
	}
	// The stream's Recv blocks between events: heartbeats and the status go out on
	// their own clock, so a quiet agent's listener is not taken for dead.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(statusEvery / 2)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, l.snapshot())
				l.record(lctx, false)
			}
		}
	}()
	err = policyevents.Listen(lctx, l.dial, l.connected, func(ev policyevents.Event) error {
		l.handle(lctx, ev)
		return nil
	})
	cancel()
	wg.Wait()
	switch {
	case ctx.Err() != nil: // cancelled by the workflow (re-registered, stopped) or timed out
		l.failed("")
		l.record(context.WithoutCancel(ctx), true)
		return flow.PolicyListened{}, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		l.record(ctx, true)
		return flow.PolicyListened{}, nil // the attempt ran its course
	}
	l.failed(err.Error())
	l.record(ctx, true)
	return flow.PolicyListened{}, fmt.Errorf("policy agent %s (%s): %w", in.Name, l.agent.Addr, err)
}

// listener is one listening attempt: the agent as registered, how it is dialled, its
// status, and what it learnt of contexts and agents.
type listener struct {
	a      *Activities
	id     string
	name   string // the registered agent's: what intents' event.agent match
	agent  policy.Agent
	sealed []byte // the agent's token, sealed
	dial   policyevents.Agent
	// clusters are the agent's, as placements name them.
	clusters []string

	mu      sync.Mutex
	status  flow.PolicyAgentStatus
	changed bool

	// bindings and agents are the handler's alone (one event at a time): what it read of
	// contexts and of claimed agent ids, each read again after bindingFor.
	bindings map[string]*binding
	agents   map[string]seen
}

// listener reads the agent (nil: deregistered) and the status its last listener recorded.
func (a *Activities) listener(ctx context.Context, in flow.PolicyAgentInput) (*listener, error) {
	d, err := a.Store.Get(ctx, in.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l := &listener{a: a, id: in.ID(), name: in.Name, sealed: d.Secret, bindings: map[string]*binding{}, agents: map[string]seen{}}
	if err := json.Unmarshal([]byte(d.Body), &l.agent); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("policy agent "+in.Name+": "+err.Error(), lifecycle.ErrInvalidInput, nil)
	}
	if d.State != "" {
		_ = json.Unmarshal([]byte(d.State), &l.status) // a status that does not decode starts again
	}
	l.status.Addr, l.status.Connected = l.agent.Addr, false
	return l, nil
}

// prepare makes how the agent is dialled: its TLS configuration and its token, opened.
// An agent registered without clusters (EMCO's registration, or one stored before they
// were asked for) could deliver nothing: it is not listened to until it is bound.
func (l *listener) prepare() error {
	if !l.agent.Bound() {
		return temporal.NewNonRetryableApplicationError("policy agent "+l.name+" is "+policy.Unbound, lifecycle.ErrInvalidInput, nil)
	}
	for _, c := range l.agent.Clusters {
		l.clusters = append(l.clusters, c.Key())
	}
	l.dial = policyevents.Agent{Addr: l.agent.Addr}
	if l.agent.TLS != nil {
		cfg, err := l.agent.TLS.Config()
		if err != nil {
			return temporal.NewNonRetryableApplicationError("policy agent "+l.name+": "+err.Error(), lifecycle.ErrInvalidInput, nil)
		}
		l.dial.TLS = cfg
	}
	if len(l.sealed) > 0 {
		if l.a.Keys == nil {
			return errors.New("policy agent " + l.name + ": its token is sealed and this worker holds no keys")
		}
		plain, err := l.a.Keys.Open(l.sealed, []byte(l.id))
		if err != nil {
			return fmt.Errorf("policy agent %s: open its token: %w", l.name, err)
		}
		var t struct{ Token string }
		if err := json.Unmarshal(plain, &t); err != nil {
			return fmt.Errorf("policy agent %s: its token: %w", l.name, err)
		}
		l.dial.Token = t.Token
	}
	return nil
}

func (l *listener) connected() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status.Connected, l.status.Since, l.status.LastError, l.changed = true, time.Now().UTC(), "", true
}

func (l *listener) failed(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.status.Connected || msg != "" {
		l.status.Since = time.Now().UTC()
	}
	l.status.Connected, l.changed = false, true
	if msg != "" {
		l.status.LastError = msg
	}
}

func (l *listener) snapshot() flow.PolicyAgentStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

func (l *listener) count(f func(s *flow.PolicyAgentStatus)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.status)
	l.changed = true
}

// record writes the status into the agent's document when it changed (always: every
// time); a write that loses to a re-registration is left to the next.
func (l *listener) record(ctx context.Context, always bool) {
	l.mu.Lock()
	if !l.changed && !always {
		l.mu.Unlock()
		return
	}
	l.changed = false
	state, _ := json.Marshal(l.status)
	l.mu.Unlock()
	d, err := l.a.Store.Get(ctx, l.id)
	if err != nil {
		return
	}
	d.State = string(state)
	if err := l.a.Store.SetState(ctx, d); err != nil {
		activity.GetLogger(ctx).Warn("record policy agent status", "agent", l.id, "error", err)
	}
}

// handle hands one event to the policy intents it is for: none when it is malformed,
// claims to come from another registered agent (spoofed) or names a context whose DIG has
// no app on the agent's clusters (foreign).
func (l *listener) handle(ctx context.Context, ev policyevents.Event) {
	l.count(func(s *flow.PolicyAgentStatus) { s.Events++; s.LastEvent = time.Now().UTC() })
	if ev.ContextID == "" || ev.EventID == "" || len(ev.MetricList) > MaxPayloadBytes || !json.Valid(ev.MetricList) {
		l.count(func(s *flow.PolicyAgentStatus) { s.Dropped++ })
		return
	}
	spoofed, err := l.spoofed(ctx, ev)
	if err != nil {
		activity.GetLogger(ctx).Warn("policy event: read the agents it claims", "error", err)
		l.count(func(s *flow.PolicyAgentStatus) { s.Dropped++ })
		return
	}
	if spoofed {
		l.count(func(s *flow.PolicyAgentStatus) { s.Spoofed++ })
		return
	}
	b, err := l.bindingOf(ctx, ev.ContextID)
	if err != nil {
		activity.GetLogger(ctx).Warn("policy event: read its context", "context", ev.ContextID, "error", err)
		l.count(func(s *flow.PolicyAgentStatus) { s.Dropped++ })
		return
	}
	switch {
	case b.dig == "":
		l.count(func(s *flow.PolicyAgentStatus) { s.Unmatched++ })
		return
	case !b.holds(ev.AppName):
		l.count(func(s *flow.PolicyAgentStatus) { s.Foreign++ })
		return
	}
	intents, err := l.matching(ctx, b.dig, ev)
	if err != nil {
		activity.GetLogger(ctx).Warn("policy event: read the DIG's policy intents", "dig", b.dig, "error", err)
		l.count(func(s *flow.PolicyAgentStatus) { s.Dropped++ })
		return
	}
	if len(intents) == 0 {
		l.count(func(s *flow.PolicyAgentStatus) { s.Unmatched++ })
		return
	}
	dig := lifecycle.DIGOfID(b.dig)
	for _, name := range intents {
		pe := flow.PolicyEvent{Intent: name, EventID: ev.EventID, Agent: ev.AgentID, Source: l.name,
			ContextID: ev.ContextID, App: ev.AppName, At: time.Now().UTC(), AgentSpec: ev.AgentSpec, Payload: ev.MetricList}
		if err := l.a.Signal(ctx, dig, pe); err != nil {
			activity.GetLogger(ctx).Warn("policy event: hand it to the DIG's Policy workflow", "dig", b.dig, "error", err)
			l.count(func(s *flow.PolicyAgentStatus) { s.Dropped++ })
			continue
		}
		l.count(func(s *flow.PolicyAgentStatus) { s.Delivered++ })
	}
}

// matching lists the DIG's policy intents that name the event and, if they name one, this
// agent (read each time: an intent created a moment ago counts for the next event).
func (l *listener) matching(ctx context.Context, digID string, ev policyevents.Event) ([]string, error) {
	docs, err := l.a.Store.List(ctx, store.Query{Parent: digID, Kind: model.KindPolicyIntent})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range docs {
		r, err := model.Decode[policy.Intent](d.Body)
		if err == nil && r.Spec.Event.Matches(ev.EventID, l.name) {
			names = append(names, d.Name)
		}
	}
	return names, nil
}
