package diagnostics

import (
	"cmp"
	"slices"
	"time"
)

// Where a resource was declared.
const (
	SourceREST = "rest" // created without X-Temco-Owner
	SourceHub  = "hub"  // created by temco hub (an owner), or refused there
)

// Entry is one declared resource: a stored one (accepted), or a hub object the API refused.
type Entry struct {
	Kind    string `json:"kind"`              // the hub's kind names: Project, DeploymentIntentGroup, ...
	Path    string `json:"path,omitempty"`    // /v2/...; a refused object's may be empty
	Project string `json:"project,omitempty"` // empty for providers and clusters
	Name    string `json:"name"`
	Version string `json:"version,omitempty"` // a composite app's
	Source  string `json:"source"`
	Owner   string `json:"owner,omitempty"` // a hub resource's X-Temco-Owner
	// Object and Generation: the hub object reported (a refused one, or the accepted one
	// that declares a stored resource), and the generation its report is about.
	Object     string     `json:"object,omitempty"`
	Namespace  string     `json:"namespace,omitempty"` // a refused object's
	Generation int64      `json:"generation,omitempty"`
	Reported   *time.Time `json:"reported,omitempty"` // when the hub decided
	Accepted   bool       `json:"accepted"`
	// Errors: a refused object's refusal; for an accepted resource what temco knows is
	// wrong with it (its last operation failed).
	Errors []string `json:"errors"`
}

// Key orders entries by path, then object; a page's token is the last one's.
func (e *Entry) Key() string { return e.Path + "\n" + e.Object }

// Summary counts entries.
type Summary struct {
	Total   int `json:"total"`
	Refused int `json:"refused"`
	Hub     int `json:"hub"`
	REST    int `json:"rest"`
}

// refusedWithoutMessage stands for a refusal the hub reported with no message.
const refusedWithoutMessage = "refused (the hub sent no message)"

// Merge lists the stored resources and the hub's reports, sorted by Key: a refused
// report is an entry of its own; an accepted one adds its object and generation to the
// stored resource at its path (one the store does not hold is left out: the resource's
// own entry is what counts, and it was deleted or is not visible to the caller).
func Merge(stored []Entry, reports []Declaration) []Entry {
	out := slices.Clone(stored)
	at := make(map[string]int, len(out))
	for i, e := range out {
		at[e.Path] = i
	}
	for _, d := range reports {
		if d.Accepted {
			if i, ok := at[d.Path]; ok && d.Path != "" {
				out[i].Object, out[i].Generation, out[i].Reported = d.Object, d.Generation, reportTime(d)
			}
			continue
		}
		msg := d.Message
		if msg == "" {
			msg = refusedWithoutMessage
		}
		out = append(out, Entry{Kind: d.Kind, Path: d.Path, Project: d.Project, Name: d.Name, Source: SourceHub,
			Object: d.Object, Namespace: d.Namespace, Generation: d.Generation, Reported: reportTime(d), Errors: []string{msg}})
	}
	for i := range out {
		if out[i].Errors == nil {
			out[i].Errors = []string{}
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Key(), b.Key()) })
	return out
}

func reportTime(d Declaration) *time.Time {
	if d.Time.IsZero() {
		return nil
	}
	t := d.Time
	return &t
}

// Filter selects entries; zero values select all.
type Filter struct {
	Source   string // SourceREST or SourceHub
	Accepted *bool
}

// Select keeps the entries f matches.
func (f Filter) Select(entries []Entry) []Entry {
	return slices.DeleteFunc(slices.Clone(entries), func(e Entry) bool {
		return f.Source != "" && e.Source != f.Source || f.Accepted != nil && e.Accepted != *f.Accepted
	})
}

// Summarize counts entries by acceptance and source.
func Summarize(entries []Entry) Summary {
	s := Summary{Total: len(entries)}
	for _, e := range entries {
		if !e.Accepted {
			s.Refused++
		}
		if e.Source == SourceHub {
			s.Hub++
		} else {
			s.REST++
		}
	}
	return s
}

// Page is up to limit entries after the one whose Key is after ("": from the first), and
// whether more remain.
func Page(entries []Entry, after string, limit int) ([]Entry, bool) {
	start := 0
	if after != "" {
		start, _ = slices.BinarySearchFunc(entries, after, func(e Entry, k string) int { return cmp.Compare(e.Key(), k) })
		if start < len(entries) && entries[start].Key() == after {
			start++
		}
	}
	end := min(start+limit, len(entries))
	return entries[start:end], end < len(entries)
}
