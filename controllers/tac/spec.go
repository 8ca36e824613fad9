package tac

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/internal/core/model"
)

// Hook types, as EMCO names them.
const (
	PreInstall      = "pre-install"
	PostInstall     = "post-install"
	PreUpdate       = "pre-update"
	PostUpdate      = "post-update"
	PreTermination  = "pre-termination"
	PostTermination = "post-termination"
)

var hookTypes = []string{PreInstall, PostInstall, PreUpdate, PostUpdate, PreTermination, PostTermination}

// Spec is a hook intent's spec: EMCO's keys (workflowClient and temporal as workflowmgr's,
// decoded case-insensitively) with the hook's type and whether it blocks.
type Spec struct {
	HookType string `json:"hookType"`
	// HookBlocking: the operation waits for the hook's workflow; its failure fails it.
	HookBlocking bool `json:"hookBlocking,omitempty"`
	// HookBlockingTimeout bounds the wait: seconds, or a duration such as "90s" (none:
	// as long as it takes).
	HookBlockingTimeout Seconds `json:"hookBlockingTimeout,omitempty"`
	// WaitForReady (temco's): a post-install or post-update hook starts once every object
	// is Ready on its clusters, not only applied.
	WaitForReady bool `json:"waitForReady,omitempty"`
	workflowmgr.Spec
}

// Validate checks a hook intent as EMCO's schema means it, and temco's additions.
func (s *Spec) Validate() error {
	if !slices.Contains(hookTypes, s.HookType) {
		return fmt.Errorf("spec.hookType %q is not one of %v", s.HookType, hookTypes)
	}
	if s.WaitForReady && s.HookType != PostInstall && s.HookType != PostUpdate {
		return fmt.Errorf("spec.waitForReady applies to %s and %s hooks only, not %s", PostInstall, PostUpdate, s.HookType)
	}
	if s.HookBlockingTimeout > 0 && !s.HookBlocking {
		return fmt.Errorf("spec.hookBlockingTimeout needs spec.hookBlocking: true (a hook that does not block is not awaited)")
	}
	return s.Spec.Validate()
}

// maxTimeout bounds hookBlockingTimeout: a larger number was most likely meant in
// nanoseconds, as EMCO's Temporal durations are.
const maxTimeout = 7 * 24 * time.Hour

// Seconds is a duration given as a number of seconds or as a Go duration string.
type Seconds time.Duration

func (d *Seconds) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*d = 0
		return nil
	}
	var v time.Duration
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		if v, err = time.ParseDuration(str); err != nil {
			if n, nerr := strconv.ParseFloat(str, 64); nerr == nil {
				v = time.Duration(n * float64(time.Second))
			} else {
				return fmt.Errorf("hookBlockingTimeout %q is neither seconds nor a duration such as \"90s\"", str)
			}
		}
	} else {
		var n float64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("hookBlockingTimeout must be seconds or a duration such as \"90s\", got %s", b)
		}
		v = time.Duration(n * float64(time.Second))
	}
	if v < 0 || v > maxTimeout {
		return fmt.Errorf("hookBlockingTimeout %s is out of range: seconds (or a duration such as \"90s\") up to %s", b, maxTimeout)
	}
	*d = Seconds(v)
	return nil
}

func (d Seconds) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// WorkerSpec is a worker intent's spec: a DIG of the same project that runs what the
// hook's workflow needs, instantiated before the hooks and terminated after them.
type WorkerSpec struct {
	// StartToCloseTimeout is how long, in milliseconds, the worker DIG may take to be
	// instantiated and Ready (EMCO's default 1000000).
	StartToCloseTimeout int64  `json:"startToCloseTimeout"`
	DIG                 string `json:"deploymentIntentGroup"`
	CompositeApp        string `json:"compositeApp"`
	CompositeAppVersion string `json:"compositeAppVersion"`
}

// defaultWorkerTimeout is EMCO's default startToCloseTimeout, in milliseconds.
const defaultWorkerTimeout = 1000000

func (w *WorkerSpec) validate() error {
	for field, v := range map[string]string{"deploymentIntentGroup": w.DIG, "compositeApp": w.CompositeApp,
		"compositeAppVersion": w.CompositeAppVersion} {
		if v == "" {
			return fmt.Errorf("spec.%s is required", field)
		}
		if err := model.ValidateName("spec."+field, v); err != nil {
			return err
		}
	}
	if w.StartToCloseTimeout < 0 {
		return fmt.Errorf("spec.startToCloseTimeout must not be negative (milliseconds), got %d", w.StartToCloseTimeout)
	}
	return nil
}

// timeout is the worker's startToCloseTimeout as a duration.
func (w *WorkerSpec) timeout() time.Duration {
	if w.StartToCloseTimeout == 0 {
		return defaultWorkerTimeout * time.Millisecond
	}
	return time.Duration(w.StartToCloseTimeout) * time.Millisecond
}
