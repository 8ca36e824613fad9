package events

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/temco/temco/internal/core/model"
)

// The formats a receiver takes its events in.
const (
	// FormatCloudEvents: an HTTP POST of one CloudEvent 1.0 in structured JSON, signed.
	FormatCloudEvents = "cloudevents"
	// FormatSlack: a Slack incoming webhook's {"text": ...} (Mattermost, Rocket.Chat and
	// Teams' Slack-compatible hooks take it too). Unsigned: the URL is its secret.
	FormatSlack = "slack"
)

// Mask stands for the URL's path and query and for the secret in every answer.
const Mask = "********"

// Receiver is a notification receiver (kind notificationReceiver): a project's, which gets
// its project's events, or an admin's (at the top level), which gets the whole fleet's.
// URL and Secret are sealed at rest (Sealed) and masked in answers.
type Receiver struct {
	Format string `json:"format"`
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
	Filter Filter `json:"filter"`
}

// Filter chooses a receiver's events; an empty list matches every event.
type Filter struct {
	// Events are types ("operation.failed") or a type's first words and ".*" ("drift.*").
	Events []string `json:"events,omitempty"`
	// Projects: an admin's receiver only.
	Projects []string `json:"projects,omitempty"`
	// DIGs are deployment intent groups' names: only events about one of them match.
	DIGs []string `json:"deploymentIntentGroups,omitempty"`
	// ClusterLabels: only events about a cluster carrying one of them match.
	ClusterLabels []string `json:"clusterLabels,omitempty"`
}

// Sealed is what a receiver keeps sealed.
type Sealed struct {
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}

// Matches reports whether the receiver of scope (a project's name; "" for an admin's)
// takes e.
func (f *Filter) Matches(scope string, e *Event) bool {
	if scope != "" && e.Project != scope {
		return false // a project's receivers see only its own events
	}
	if len(f.Projects) > 0 && !slices.Contains(f.Projects, e.Project) {
		return false
	}
	if len(f.DIGs) > 0 && (e.DIG == "" || !slices.Contains(f.DIGs, e.DIG)) {
		return false
	}
	if len(f.ClusterLabels) > 0 && !slices.ContainsFunc(e.ClusterLabels, func(l string) bool { return slices.Contains(f.ClusterLabels, l) }) {
		return false
	}
	return len(f.Events) == 0 || slices.ContainsFunc(f.Events, func(t string) bool { return typeMatches(t, e.Type) })
}

func typeMatches(pattern, typ string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(typ, prefix)
	}
	return pattern == typ
}

// Check validates and normalises a receiver of scope ("" for an admin's): its URL's host
// must be one allowed answers true for (egress.Allow's AllowsURL: the hosts an admin allowed).
func (r *Receiver) Check(scope string, allowed func(*url.URL) bool) error {
	switch r.Format {
	case "":
		r.Format = FormatCloudEvents
	case FormatCloudEvents, FormatSlack:
	default:
		return fmt.Errorf("spec.format %q is not %q or %q", r.Format, FormatCloudEvents, FormatSlack)
	}
	if err := model.ValidateLen("spec.url", r.URL, 2048); err != nil {
		return err
	}
	if err := model.ValidateLen("spec.secret", r.Secret, 512); err != nil {
		return err
	}
	if err := CheckURL(r.URL, allowed); err != nil {
		return err
	}
	if r.Format == FormatCloudEvents && len(r.Secret) < 16 {
		return fmt.Errorf("spec.secret: a cloudevents receiver's signing secret must be at least 16 characters")
	}
	if r.Format == FormatSlack && r.Secret != "" {
		return fmt.Errorf("spec.secret: a slack receiver is not signed (its URL is its secret): leave it out")
	}
	return r.Filter.check(scope)
}

// CheckURL refuses a URL temco may not post to: not http(s), with a user, or whose host
// an admin did not allow.
func CheckURL(raw string, allowed func(*url.URL) bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("spec.url must be an absolute http or https URL")
	}
	if u.User != nil {
		return fmt.Errorf("spec.url may not carry a user or password")
	}
	if !allowed(u) {
		return &HostRefused{Host: u.Host}
	}
	return nil
}

// HostRefused is a receiver's URL on a host no admin allowed.
type HostRefused struct{ Host string }

func (e *HostRefused) Error() string {
	return "spec.url: host " + e.Host + " is not one temco may send notifications to (an admin allows hosts with TEMCO_NOTIFY_HOSTS_ALLOW)"
}

func (f *Filter) check(scope string) error {
	for _, t := range f.Events {
		if !slices.ContainsFunc(Types, func(typ string) bool { return typeMatches(t, typ) }) {
			return fmt.Errorf("spec.filter.events: %q names no event type (%s, or a prefix such as \"drift.*\")", t, strings.Join(Types, ", "))
		}
	}
	if scope != "" && len(f.Projects) > 0 {
		return fmt.Errorf("spec.filter.projects: a project's receiver gets its own project's events only")
	}
	for _, list := range [][]string{f.Projects, f.DIGs, f.ClusterLabels} {
		if len(list) > 100 {
			return fmt.Errorf("spec.filter: at most 100 entries in a list")
		}
		for _, n := range list {
			if err := model.ValidateLen("spec.filter entry", n, 128); err != nil {
				return err
			}
		}
	}
	return nil
}

// Masked is the URL as answers show it: scheme and host, the rest masked (a Slack hook's
// path is its token).
func Masked(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Mask
	}
	return u.Scheme + "://" + u.Host + "/" + Mask
}
