package api

import (
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Every kind of target has its readiness check: a kind added without one would answer
// every instantiate with a panic.
func TestEveryKindHasAReadinessCheck(t *testing.T) {
	for _, k := range lifecycle.Kinds {
		if notReady[k] == nil {
			t.Errorf("kind %s has no readiness check (notReady)", k.Name)
		}
	}
}
