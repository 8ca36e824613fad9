package digstate

import (
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

func TestNewHistoryIsCreatedNow(t *testing.T) {
	info, err := Parse(&store.Doc{State: NewHistory()})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Actions) != 1 || info.Current() != lifecycle.StateCreated || time.Since(info.Actions[0].TimeStamp) > time.Minute {
		t.Errorf("new history %+v", info)
	}
}
