// Package rollout holds temco's rollout strategies: the resource an operator puts under a
// DIG (ordered stages of clusters with their gates), its validation, and the pure
// functions that lay a context's clusters out in stages and tell when a maintenance
// window opens. It does no I/O, so the operation workflows can import it.
package rollout

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is the spec of a rollout strategy resource.
type Spec struct {
	// Stages run in order; a cluster belongs to the first stage that selects it.
	Stages []Stage `json:"stages"`
	// Rollback says what a failed stage does: auto (default) returns every cluster the
	// operation changed to the previous revision (removes the apps after a first
	// instantiate) and fails the operation; manual waits for an operator's decision.
	Rollback string `json:"rollback,omitempty"`
	// Offline says what a stage does with an agent cluster whose agent stopped calling.
	Offline *Offline `json:"offline,omitempty"`
}

// Offline is what a rollout does with an agent cluster (docs/agent.md) whose agent has not
// called temco for After: the cluster is offline, which is a state, not a failure.
type Offline struct {
	// After is how long an agent may go without calling before its cluster counts as
	// offline (default DefaultOfflineAfter, at least MinOfflineAfter: the apis record
	// their agents' calls, held polls included, every 10 s).
	After Duration `json:"after,omitempty"`
	// Policy: OfflineWait (default) waits for the agent, as for any slow cluster (within
	// the stage's progress deadline); OfflineSkip lets the stage go on without the cluster,
	// which its agent brings to the newest revision when it returns, and leaves it out of
	// the stage's gates; OfflineFail counts it as a failed cluster, against the stage's
	// failure budget.
	Policy string `json:"policy,omitempty"`
}

// Offline policies, and the bounds of Offline.After.
const (
	OfflineWait = "wait"
	OfflineSkip = "skip"
	OfflineFail = "fail"

	DefaultOfflineAfter = 10 * time.Minute
	MinOfflineAfter     = 30 * time.Second
)

// OfflineOf is s.Offline with its defaults.
func (s *Spec) OfflineOf() Offline {
	o := Offline{Policy: OfflineWait, After: Duration(DefaultOfflineAfter)}
	if s.Offline != nil {
		o.Policy, o.After = cmp.Or(s.Offline.Policy, o.Policy), cmp.Or(s.Offline.After, o.After)
	}
	return o
}

// UnmarshalJSON decodes as encoding/json does, but names the stage and field at fault,
// which encoding/json does not do for a field whose own decoder (a Duration, an
// IntOrPercent) refused its value.
func (s *Spec) UnmarshalJSON(b []byte) error {
	type plain Spec
	err := json.Unmarshal(b, (*plain)(s))
	if err == nil {
		return nil
	}
	var raw struct {
		Stages []map[string]json.RawMessage `json:"stages"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return err // not within a stage: encoding/json's error names the field
	}
	for i, st := range raw.Stages {
		for _, k := range slices.Sorted(maps.Keys(st)) {
			one, _ := json.Marshal(map[string]json.RawMessage{k: st[k]})
			var field Stage
			if e := json.Unmarshal(one, &field); e != nil {
				// Not wrapped: the message is complete, and a wrapped type error would be
				// re-labelled by the caller's decoder.
				var te *json.UnmarshalTypeError
				if errors.As(e, &te) {
					return fmt.Errorf("spec.stages[%d]: %s: expected %s, not %s", i, te.Field, te.Type, te.Value)
				}
				return fmt.Errorf("spec.stages[%d]: %s: %v", i, k, e)
			}
		}
	}
	return err
}

// Rollback policies.
const (
	RollbackAuto   = "auto"
	RollbackManual = "manual"
)

// Stage is one step of a rollout: a set of clusters changed together, under its gates.
type Stage struct {
	Name string `json:"name"`
	// Clusters selects clusters by name ("cluster" in any provider, or "provider+cluster");
	// ClusterLabels selects the clusters that have every one of these labels. A cluster
	// either selects is in the stage; a stage with neither takes every cluster left.
	Clusters      []string `json:"clusters,omitempty"`
	ClusterLabels []string `json:"clusterLabels,omitempty"`
	// SortByLabel orders the stage's clusters by the value of their label "<key>=<value>"
	// (numbers first, numerically, then other values lexically); clusters without it go
	// last; ties by name.
	// Without it clusters go by name.
	SortByLabel string `json:"sortByLabel,omitempty"`

	// MaxConcurrency is how many of the stage's clusters are changed at once (a count or a
	// percentage of the stage; default 100%).
	MaxConcurrency *IntOrPercent `json:"maxConcurrency,omitempty"`
	// MaxUnavailable is how many of the stage's changed clusters may be not Ready before
	// the next group of MaxConcurrency starts (default: no wait between groups).
	MaxUnavailable *IntOrPercent `json:"maxUnavailable,omitempty"`
	// MaxFailures is the stage's failure budget: how many of its clusters may fail to
	// apply or to become Ready before the deadline, or fall out of Ready during the bake,
	// without failing the stage (default 0).
	MaxFailures *IntOrPercent `json:"maxFailures,omitempty"`
	// ProgressDeadline bounds the stage from its first apply until every cluster is Ready
	// (default 10m). MinSuccessTime is the bake: how long the stage must then stay
	// Ready before the rollout goes on (default 0).
	ProgressDeadline Duration `json:"progressDeadline,omitempty"`
	MinSuccessTime   Duration `json:"minSuccessTime,omitempty"`

	// Before and After are tasks run before the stage starts and after it succeeded.
	Before []Task `json:"before,omitempty"`
	After  []Task `json:"after,omitempty"`
	// Window, when set, is when the stage may start.
	Window *Window `json:"window,omitempty"`
}

// Task is a stage's before or after task: an approval (an operator's signal) or a wait.
type Task struct {
	Type     string   `json:"type"`
	Duration Duration `json:"duration,omitempty"` // wait
}

// Task types.
const (
	TaskApproval = "approval"
	TaskWait     = "wait"
)

// Window is a recurring maintenance window: it opens at each time the cron expression
// (five fields, as crontab) names in TimeZone (an IANA name; default UTC) and stays open
// for Duration.
type Window struct {
	Cron     string   `json:"cron"`
	Duration Duration `json:"duration"`
	TimeZone string   `json:"timeZone,omitempty"`
}

// DefaultProgressDeadline bounds a stage whose strategy sets no progressDeadline.
const DefaultProgressDeadline = 10 * time.Minute

// Duration is a time.Duration written as Go writes it ("90s", "10m", "1h30m").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "10m"-style strings; null leaves d unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"10m\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (such as \"90s\" or \"10m\")", s)
	}
	*d = Duration(v)
	return nil
}

// IntOrPercent is a count (5) or a share of a stage ("25%").
type IntOrPercent struct {
	Value   int
	Percent bool
}

// MarshalJSON writes a count as a number and a share as "N%".
func (v IntOrPercent) MarshalJSON() ([]byte, error) {
	if v.Percent {
		return json.Marshal(strconv.Itoa(v.Value) + "%")
	}
	return json.Marshal(v.Value)
}

// UnmarshalJSON reads 5, "5" or "25%"; null leaves v unchanged.
func (v *IntOrPercent) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*v = IntOrPercent{Value: n}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a count or a percentage such as \"25%%\", not %s", b)
	}
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	n, err := strconv.Atoi(num)
	if err != nil {
		return fmt.Errorf("%q is not a count or a percentage such as \"25%%\"", s)
	}
	*v = IntOrPercent{Value: n, Percent: pct}
	return nil
}

// Of resolves v against a stage of n clusters (a share rounds up: "10%" of 5 is 1);
// def is used when v is nil.
func (v *IntOrPercent) Of(n, def int) int {
	if v == nil {
		return def
	}
	if !v.Percent {
		return v.Value
	}
	return int(math.Ceil(float64(v.Value) * float64(n) / 100))
}

// JSONSchema describes a Duration in the API's OpenAPI document.
func (Duration) JSONSchema() map[string]any {
	return map[string]any{"type": "string", "example": "10m",
		"description": `a duration as Go writes it: "90s", "10m", "1h30m"`}
}

// JSONSchema describes an IntOrPercent in the API's OpenAPI document.
func (IntOrPercent) JSONSchema() map[string]any {
	return map[string]any{"description": `a count (5) or a percentage of the stage's clusters ("25%")`,
		"oneOf": []any{
			map[string]any{"type": "integer", "minimum": 0},
			map[string]any{"type": "string", "pattern": `^[0-9]+%?$`},
		}}
}

func (v *IntOrPercent) String() string {
	if v.Percent {
		return strconv.Itoa(v.Value) + "%"
	}
	return strconv.Itoa(v.Value)
}
