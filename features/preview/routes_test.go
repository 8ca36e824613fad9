package preview

import (
	"testing"
	"time"

	"github.com/temco/temco/api"
)

// The longest bounded wait of an ordinary route must end before the server gives up.
func TestWriteTimeoutOutlastsThePreviewWait(t *testing.T) {
	if api.WriteTimeout < defaultWait+time.Minute {
		t.Errorf("WriteTimeout %s leaves a rollout preview (%s) no time to answer", api.WriteTimeout, defaultWait)
	}
}
