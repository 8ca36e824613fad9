package hpa

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// intent is one hpa intent with its consumers and their requirements.
type intent struct {
	Name      string
	App       string
	Consumers []consumer
}

type consumer struct {
	Name         string
	Spec         ConsumerSpec
	Requirements []requirement
}

type requirement struct {
	Name string
	Spec RequirementSpec
}

// where names a consumer in messages.
func (c consumer) where(in intent) string {
	return fmt.Sprintf("hpa consumer %q of intent %q", c.Name, in.Name)
}

// intentSource reads the hpa intents of a DIG. As in EMCO, both controllers use every hpa
// intent of the DIG, whatever intent name the DIG gives them.
type intentSource interface {
	Intents(ctx context.Context, in contract.Input) ([]intent, error)
}

// storeIntents reads them from the resource store, in name order at every level.
type storeIntents struct{ st *store.Store }

func (s storeIntents) Intents(ctx context.Context, in contract.Input) ([]intent, error) {
	dig := lifecycle.Target{Project: in.Project, CompositeApp: in.CompositeApp, Version: in.CompositeAppVersion, DIG: in.DeploymentIntentGroup}.ID()
	docs, err := s.list(ctx, dig, kindIntent)
	if err != nil {
		return nil, err
	}
	var out []intent
	for _, d := range docs {
		r, err := model.Decode[IntentSpec](d.Body)
		if err != nil {
			return nil, fmt.Errorf("hpa intent %s: %w", d.ID, err)
		}
		it := intent{Name: d.Name, App: r.Spec.App}
		if it.Consumers, err = s.consumers(ctx, d.ID); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

func (s storeIntents) consumers(ctx context.Context, intentID string) ([]consumer, error) {
	docs, err := s.list(ctx, intentID, kindConsumer)
	if err != nil {
		return nil, err
	}
	var out []consumer
	for _, d := range docs {
		r, err := model.Decode[ConsumerSpec](d.Body)
		if err != nil {
			return nil, fmt.Errorf("hpa consumer %s: %w", d.ID, err)
		}
		reqs, err := s.list(ctx, d.ID, kindRequirement)
		if err != nil {
			return nil, err
		}
		c := consumer{Name: d.Name, Spec: r.Spec}
		for _, rd := range reqs {
			req, err := model.Decode[RequirementSpec](rd.Body)
			if err != nil {
				return nil, fmt.Errorf("hpa resource requirement %s: %w", rd.ID, err)
			}
			c.Requirements = append(c.Requirements, requirement{Name: rd.Name, Spec: req.Spec})
		}
		out = append(out, c)
	}
	return out, nil
}

func (s storeIntents) list(ctx context.Context, parent, kind string) ([]*store.Doc, error) {
	docs, err := s.st.List(ctx, store.Query{Parent: parent, Kind: kind})
	if err != nil {
		return nil, fmt.Errorf("read %ss of %s: %w", kind, parent, err)
	}
	slices.SortFunc(docs, func(a, b *store.Doc) int { return strings.Compare(a.Name, b.Name) })
	return docs, nil
}

// byApp groups intents by the app they name. An intent naming an app the context does not
// have is refused: EMCO ignores it, which hides a misspelt app name.
// load reads what both controllers work on: the context's apps and the DIG's hpa intents
// by app (nil when there are none, or on terminate, where neither has work).
func load(ctx context.Context, src intentSource, c contract.Context) ([]contract.App, map[string][]intent, error) {
	if c.Input().Operation == contract.OpTerminate {
		return nil, nil, nil
	}
	all, err := src.Intents(ctx, c.Input())
	if err != nil || len(all) == 0 {
		return nil, nil, err
	}
	apps, err := c.Apps(ctx)
	if err != nil {
		return nil, nil, err
	}
	intents, err := byApp(all, apps)
	return apps, intents, err
}

func byApp(intents []intent, apps []contract.App) (map[string][]intent, error) {
	known := map[string]bool{}
	for _, a := range apps {
		known[a.Name] = true
	}
	out := map[string][]intent{}
	for _, it := range intents {
		if !known[it.App] {
			return nil, contract.Refuse("hpa intent %q names app %q, which the composite app does not have", it.Name, it.App)
		}
		out[it.App] = append(out[it.App], it)
	}
	return out, nil
}
