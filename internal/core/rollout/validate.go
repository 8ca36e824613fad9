package rollout

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxStages bounds a strategy: each stage is a few timers and reads in the operation's
// history, and rings beyond a few dozen are not a rollout any more.
const MaxStages = 50

var stageName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate checks a strategy as the API receives it; its errors name the field.
func (s *Spec) Validate() error {
	if len(s.Stages) == 0 {
		return errors.New("spec.stages: a rollout strategy needs at least one stage")
	}
	if len(s.Stages) > MaxStages {
		return fmt.Errorf("spec.stages: %d stages, at most %d", len(s.Stages), MaxStages)
	}
	switch s.Rollback {
	case "", RollbackAuto, RollbackManual:
	default:
		return fmt.Errorf("spec.rollback: %q is neither %q nor %q", s.Rollback, RollbackAuto, RollbackManual)
	}
	if o := s.Offline; o != nil {
		switch o.Policy {
		case "", OfflineWait, OfflineSkip, OfflineFail:
		default:
			return fmt.Errorf("spec.offline.policy: %q is none of %q, %q and %q", o.Policy, OfflineWait, OfflineSkip, OfflineFail)
		}
		if o.After != 0 && time.Duration(o.After) < MinOfflineAfter {
			return fmt.Errorf("spec.offline.after: %s is shorter than %s (each api records its agents' calls every 10 s)", time.Duration(o.After), MinOfflineAfter)
		}
	}
	seen := map[string]bool{}
	for i := range s.Stages {
		st := &s.Stages[i]
		if err := st.validate(); err != nil {
			return fmt.Errorf("spec.stages[%d]: %w", i, err)
		}
		if seen[st.Name] {
			return fmt.Errorf("spec.stages[%d]: stage name %q is used twice", i, st.Name)
		}
		seen[st.Name] = true
	}
	return nil
}

func (st *Stage) validate() error {
	if !stageName.MatchString(st.Name) {
		return fmt.Errorf("name %q: a stage name is 1 to 63 lower-case letters, digits and '-'", st.Name)
	}
	for _, c := range []struct {
		field string
		v     *IntOrPercent
		min   int
	}{{"maxConcurrency", st.MaxConcurrency, 1}, {"maxUnavailable", st.MaxUnavailable, 0}, {"maxFailures", st.MaxFailures, 0}} {
		switch {
		case c.v == nil:
		case c.v.Value < c.min:
			return fmt.Errorf("%s: %s is below %d", c.field, c.v, c.min)
		case c.v.Percent && c.v.Value > 100:
			return fmt.Errorf("%s: %s is above 100%%", c.field, c.v)
		}
	}
	switch {
	case st.ProgressDeadline < 0:
		return fmt.Errorf("progressDeadline: %s is negative", time.Duration(st.ProgressDeadline))
	case st.MinSuccessTime < 0:
		return fmt.Errorf("minSuccessTime: %s is negative", time.Duration(st.MinSuccessTime))
	case st.ProgressDeadline != 0 && time.Duration(st.ProgressDeadline) < time.Second:
		return fmt.Errorf("progressDeadline: %s is shorter than a second", time.Duration(st.ProgressDeadline))
	}
	for _, tasks := range []struct {
		field string
		list  []Task
	}{{"before", st.Before}, {"after", st.After}} {
		for j, t := range tasks.list {
			switch {
			case t.Type == TaskApproval && t.Duration != 0:
				return fmt.Errorf("%s[%d]: an approval has no duration", tasks.field, j)
			case t.Type == TaskWait && t.Duration <= 0:
				return fmt.Errorf("%s[%d]: a wait needs a positive duration", tasks.field, j)
			case t.Type != TaskApproval && t.Type != TaskWait:
				return fmt.Errorf("%s[%d]: type %q is neither %q nor %q", tasks.field, j, t.Type, TaskApproval, TaskWait)
			}
		}
	}
	if st.Window != nil {
		if err := st.Window.validate(); err != nil {
			return fmt.Errorf("window: %w", err)
		}
	}
	return nil
}

func (w *Window) validate() error {
	// A window opens at fixed times: "@every" counts from whenever it is asked, and a
	// time zone in the expression would silently override timeZone.
	if strings.HasPrefix(w.Cron, "@every") || strings.HasPrefix(w.Cron, "TZ=") || strings.HasPrefix(w.Cron, "CRON_TZ=") {
		return fmt.Errorf("cron %q: give five fields (or @hourly, @daily, @weekly, @monthly, @yearly), and the time zone in timeZone", w.Cron)
	}
	if _, err := cron.ParseStandard(w.Cron); err != nil {
		return fmt.Errorf("cron %q: %v", w.Cron, err)
	}
	if w.Duration <= 0 {
		return errors.New("duration: a window needs a positive duration")
	}
	// "Local" would be each machine's own zone: the api's and the workers' may differ.
	if _, err := time.LoadLocation(w.TimeZone); err != nil || w.TimeZone == "Local" {
		return fmt.Errorf("timeZone %q is not a known time zone (an IANA name such as Europe/Paris)", w.TimeZone)
	}
	return nil
}

// Opening is where a window stands at a moment: open (until Closes), or closed until Opens.
type Opening struct {
	Open   bool      `json:"open"`
	Opens  time.Time `json:"opens,omitempty"`
	Closes time.Time `json:"closes,omitempty"`
}

// At tells whether the window is open at now, and until when, or when it opens next.
// It reads the time zone's rules, so workflows ask through a local activity.
func (w Window) At(now time.Time) (Opening, error) {
	loc, err := time.LoadLocation(w.TimeZone)
	if err != nil {
		return Opening{}, err
	}
	sched, err := cron.ParseStandard(w.Cron)
	if err != nil {
		return Opening{}, err
	}
	d := time.Duration(w.Duration)
	// The earliest opening after now-d: if it is not after now, the window is open.
	first := sched.Next(now.In(loc).Add(-d))
	if first.IsZero() {
		return Opening{}, fmt.Errorf("cron %q never fires", w.Cron)
	}
	if !first.After(now) {
		return Opening{Open: true, Closes: first.Add(d).UTC()}, nil
	}
	return Opening{Opens: first.UTC(), Closes: first.Add(d).UTC()}, nil
}
