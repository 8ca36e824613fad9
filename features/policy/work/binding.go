package work

import (
	"context"
	"errors"
	"time"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/policy"
	"github.com/temco/temco/internal/core/store"
)

// An agent's events are bound to their source (docs/policy.md): an event reaches a DIG
// only when the DIG has apps placed on one of the clusters the agent is registered for
// (the app it names, if it names one), and never when it claims to come from another
// registered agent. What a listener reads for that is kept for bindingFor, so the store
// is read once per context (and claimed agent) and minute, whatever the event rate.

// bindingFor is how long a listener trusts what it read of a context or a claimed agent:
// a DIG updated or relocated off the agent's clusters stops getting its events within it.
const bindingFor = time.Minute

// cached bounds each of a listener's caches; a full one starts again.
const cached = 10000

// binding is what a listener read of one context: its DIG ("": not temco's, or the DIG is
// gone) and the DIG's apps placed on the agent's clusters.
type binding struct {
	dig  string
	apps map[string]bool
	read time.Time
}

// holds reports whether the event's app (any, when it names none) is on the agent's
// clusters.
func (b *binding) holds(app string) bool {
	if app == "" {
		return len(b.apps) > 0
	}
	return b.apps[app]
}

// seen is whether a claimed agent id is another registered agent's, and when it was read.
type seen struct {
	registered bool
	read       time.Time
}

// bindingOf is the binding of the context an event names, read again after bindingFor.
// A context's DIG never changes; its apps' placement does (an update, a relocation).
func (l *listener) bindingOf(ctx context.Context, contextID string) (*binding, error) {
	old := l.bindings[contextID]
	if old != nil && time.Since(old.read) < bindingFor {
		return old, nil
	}
	b := &binding{read: time.Now()}
	if old != nil {
		b.dig = old.dig
	} else {
		dig, err := l.a.Contexts.DIGOf(ctx, contextID)
		if err != nil && !errors.Is(err, appctx.ErrNotFound) {
			return nil, err
		}
		b.dig = dig
	}
	if b.dig != "" {
		var err error
		if b.dig, b.apps, err = l.placedOnAgent(ctx, b.dig, contextID); err != nil {
			return nil, err
		}
	}
	if len(l.bindings) >= cached {
		clear(l.bindings)
	}
	l.bindings[contextID] = b
	return b, nil
}

// placedOnAgent reads the apps the DIG's current context (the one its last operation
// made; the event's context names the instance's first) places on the agent's clusters:
// one read of the DIG and one per agent cluster. A terminated DIG has none; a DIG that
// is gone is "".
func (l *listener) placedOnAgent(ctx context.Context, digID, contextID string) (string, map[string]bool, error) {
	d, err := l.a.Store.Get(ctx, digID)
	if store.CodeOf(err) == store.ErrNotFound {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	info, _ := digstate.Parse(d) // a history that does not decode: the event's context
	if info.Current() == lifecycle.StateTerminated {
		return digID, nil, nil
	}
	current := info.ContextID()
	if current == "" {
		current = contextID
	}
	apps := map[string]bool{}
	for _, c := range l.clusters {
		placed, err := l.a.Contexts.PlacedApps(ctx, current, c)
		if err != nil {
			return "", nil, err
		}
		for _, p := range placed {
			apps[p.App] = true
		}
	}
	return digID, apps, nil
}

// spoofed reports whether the event claims to come from another registered agent (its
// agentId or its spec's): such an event can only be one agent impersonating another.
// Ids no agent is registered under (EMCO's collectors name themselves) are the agent's to
// choose: intents match the registered agent, not them.
func (l *listener) spoofed(ctx context.Context, ev policyevents.Event) (bool, error) {
	for _, id := range policy.ClaimedAgents(l.name, ev.AgentID, ev.AgentSpec) {
		if model.ValidateName("agent", id) != nil {
			continue // no agent is registered under a name that is not one
		}
		s, ok := l.agents[id]
		if !ok || time.Since(s.read) >= bindingFor {
			registered, err := l.a.Store.Exists(ctx, flow.PolicyAgentInput{Name: id}.ID())
			if err != nil {
				return false, err
			}
			if len(l.agents) >= cached {
				clear(l.agents)
			}
			s = seen{registered: registered, read: time.Now()}
			l.agents[id] = s
		}
		if s.registered {
			return true, nil
		}
	}
	return false, nil
}
