package dashboard

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/events"
)

// The notifications view's type filter offers every event type the feed keeps, in the
// docs' order: a type added to events.Types must be added to the page too.
func TestNotificationsViewOffersEveryEventType(t *testing.T) {
	src, err := files.ReadFile("web/notifications.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)export const EVENT_TYPES = \[(.*?)\];`).FindSubmatch(src)
	if m == nil {
		t.Fatal("web/notifications.js declares no EVENT_TYPES array")
	}
	var got []string
	for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllSubmatch(m[1], -1) {
		got = append(got, string(q[1]))
	}
	if !slices.Equal(got, events.Types) {
		t.Errorf("the page's event types:\n  %s\nevents.Types:\n  %s", strings.Join(got, ", "), strings.Join(events.Types, ", "))
	}
}
