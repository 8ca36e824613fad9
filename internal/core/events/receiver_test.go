package events

import (
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/egress"
)

// A receiver's filter: a project's receiver takes its own project's events only (never
// another's, never the fleet's), whatever its filter says; an admin's takes every one
// its filter takes.
func TestFilterMatches(t *testing.T) {
	digFailed := (&Event{Type: OperationFailed}).About("/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1")
	otherDIG := (&Event{Type: OperationFailed}).About("/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d2")
	otherProject := (&Event{Type: OperationFailed}).About("/projects/p2/composite-apps/ca/v1/deployment-intent-groups/d1")
	drift := (&Event{Type: DriftFound}).About("/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1")
	drift.AboutCluster("cp+c1", []string{"edge", "eu"})
	fleet := (&Event{Type: ClusterUnreachable}).AboutCluster("cp+c1", []string{"edge"})
	stage := (&Event{Type: StageWaiting}).About("/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1")

	for _, c := range []struct {
		name   string
		scope  string
		filter Filter
		event  *Event
		want   bool
	}{
		{"a project's receiver takes its project's event", "p1", Filter{}, digFailed, true},
		{"a project's receiver never takes another project's", "p1", Filter{}, otherProject, false},
		{"a project's receiver never takes the fleet's", "p1", Filter{}, fleet, false},
		{"a project's receiver naming another project still takes none of it", "p1", Filter{Projects: []string{"p2"}}, otherProject, false},
		{"a project's receiver with an events filter still takes no fleet event", "p1", Filter{Events: []string{"cluster.*"}}, fleet, false},
		{"an admin's receiver takes any project's", "", Filter{}, otherProject, true},
		{"an admin's receiver takes the fleet's", "", Filter{}, fleet, true},
		{"an admin's projects filter takes its projects", "", Filter{Projects: []string{"p2"}}, otherProject, true},
		{"an admin's projects filter leaves out the others", "", Filter{Projects: []string{"p2"}}, digFailed, false},
		{"an admin's projects filter leaves out the fleet's", "", Filter{Projects: []string{"p2"}}, fleet, false},
		{"an event type matches itself", "p1", Filter{Events: []string{OperationFailed}}, digFailed, true},
		{"an event type matches no other", "p1", Filter{Events: []string{OperationSucceeded}}, digFailed, false},
		{"a prefix matches its types", "p1", Filter{Events: []string{"drift.*"}}, drift, true},
		{"a prefix matches no other types", "p1", Filter{Events: []string{"drift.*"}}, digFailed, false},
		{"a prefix of several words", "p1", Filter{Events: []string{"rollout.*"}}, stage, true},
		{"one of several types", "p1", Filter{Events: []string{"drift.*", OperationFailed}}, digFailed, true},
		{"a DIG filter takes its DIG", "p1", Filter{DIGs: []string{"d1"}}, digFailed, true},
		{"a DIG filter leaves out other DIGs", "p1", Filter{DIGs: []string{"d1"}}, otherDIG, false},
		{"a DIG filter leaves out events about no DIG", "", Filter{DIGs: []string{"d1"}}, fleet, false},
		{"a cluster label filter takes a cluster carrying one", "p1", Filter{ClusterLabels: []string{"us", "eu"}}, drift, true},
		{"a cluster label filter leaves out a cluster carrying none", "", Filter{ClusterLabels: []string{"us"}}, fleet, false},
		{"a cluster label filter leaves out events about no cluster", "p1", Filter{ClusterLabels: []string{"edge"}}, digFailed, false},
		{"every list must take the event", "", Filter{Events: []string{"drift.*"}, DIGs: []string{"d1"}, ClusterLabels: []string{"edge"}, Projects: []string{"p1"}}, drift, true},
		{"one list that does not take it is enough", "", Filter{Events: []string{"drift.*"}, DIGs: []string{"d2"}}, drift, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.filter.Matches(c.scope, c.event); got != c.want {
				t.Errorf("scope %q filter %+v on %s about %s (project %q): %v, want %v", c.scope, c.filter, c.event.Type, c.event.Resource, c.event.Project, got, c.want)
			}
		})
	}
}

func TestReceiverCheck(t *testing.T) {
	allow := egress.MustParse("hooks.example.com,10.0.0.5:8080")
	const secret = "0123456789abcdef"
	for _, c := range []struct {
		name  string
		scope string
		r     Receiver
		want  string // "" accepted; otherwise a part of the message
	}{
		{"cloudevents, signed", "p1", Receiver{Format: FormatCloudEvents, URL: "https://hooks.example.com/x", Secret: secret}, ""},
		{"the format defaults to cloudevents", "p1", Receiver{URL: "https://hooks.example.com/x", Secret: secret}, ""},
		{"slack, unsigned", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/services/T/B/x"}, ""},
		{"a host and port allowed", "", Receiver{Format: FormatSlack, URL: "http://10.0.0.5:8080/hook"}, ""},
		{"an unknown format", "p1", Receiver{Format: "email", URL: "https://hooks.example.com/x"}, `spec.format "email" is not "cloudevents" or "slack"`},
		{"no URL", "p1", Receiver{Format: FormatSlack}, "spec.url must be an absolute http or https URL"},
		{"a relative URL", "p1", Receiver{Format: FormatSlack, URL: "/hook"}, "spec.url must be an absolute http or https URL"},
		{"another scheme", "p1", Receiver{Format: FormatSlack, URL: "ftp://hooks.example.com/x"}, "spec.url must be an absolute http or https URL"},
		{"a user in the URL", "p1", Receiver{Format: FormatSlack, URL: "https://u:p@hooks.example.com/x"}, "spec.url may not carry a user or password"},
		{"a host not allowed", "p1", Receiver{Format: FormatSlack, URL: "https://evil.example.com/x"}, "host evil.example.com is not one temco may send notifications to (an admin allows hosts with TEMCO_NOTIFY_HOSTS_ALLOW)"},
		{"an allowed host on another port", "p1", Receiver{Format: FormatSlack, URL: "http://10.0.0.5:9090/x"}, "TEMCO_NOTIFY_HOSTS_ALLOW"},
		{"a URL too long", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/" + strings.Repeat("x", 2048)}, "spec.url"},
		{"a cloudevents receiver without a secret", "p1", Receiver{Format: FormatCloudEvents, URL: "https://hooks.example.com/x"}, "at least 16 characters"},
		{"a cloudevents secret too short", "p1", Receiver{URL: "https://hooks.example.com/x", Secret: "short"}, "at least 16 characters"},
		{"a secret too long", "p1", Receiver{URL: "https://hooks.example.com/x", Secret: strings.Repeat("s", 513)}, "spec.secret"},
		{"a slack receiver with a secret", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Secret: secret}, "a slack receiver is not signed"},
		{"known events and prefixes", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Filter: Filter{Events: []string{"drift.*", "rollout.*", OperationFailed}}}, ""},
		{"an unknown event type", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Filter: Filter{Events: []string{"operation.exploded"}}}, `spec.filter.events: "operation.exploded" names no event type`},
		{"a prefix of no type", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Filter: Filter{Events: []string{"nothing.*"}}}, `"nothing.*" names no event type`},
		{"a project's receiver naming projects", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Filter: Filter{Projects: []string{"p2"}}}, "spec.filter.projects: a project's receiver gets its own project's events only"},
		{"an admin's receiver naming projects", "", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Filter: Filter{Projects: []string{"p2"}}}, ""},
		{"a list too long", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Filter: Filter{DIGs: make([]string, 101)}}, "at most 100 entries"},
		{"an entry too long", "p1", Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x", Filter: Filter{ClusterLabels: []string{strings.Repeat("l", 129)}}}, "spec.filter entry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.r
			err := r.Check(c.scope, allow.AllowsURL)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
			if c.want == "" && r.Format == "" {
				t.Error("the format was left empty, not defaulted")
			}
		})
	}
	// No list allows no host.
	r := Receiver{Format: FormatSlack, URL: "https://hooks.example.com/x"}
	if err := r.Check("p1", (*egress.Allow)(nil).AllowsURL); err == nil || !strings.Contains(err.Error(), "TEMCO_NOTIFY_HOSTS_ALLOW") {
		t.Errorf("without an allow-list: %v", err)
	}
}

// Answers show a URL's scheme and host only: a Slack hook's path is its token.
func TestMasked(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T000/B000/XXXX": "https://hooks.slack.com/" + Mask,
		"http://10.0.0.5:8080/hook?token=abc":             "http://10.0.0.5:8080/" + Mask,
		"https://hooks.example.com":                       "https://hooks.example.com/" + Mask,
		"not a url":                                       Mask,
		"":                                                Mask,
		"https://u:secret@hooks.example.com/x":            "https://hooks.example.com/" + Mask,
	} {
		if got := Masked(raw); got != want {
			t.Errorf("Masked(%q) = %q, want %q", raw, got, want)
		}
		if strings.Contains(Masked(raw), "secret") || strings.Contains(Masked(raw), "XXXX") || strings.Contains(Masked(raw), "abc") {
			t.Errorf("Masked(%q) shows a secret part", raw)
		}
	}
}
