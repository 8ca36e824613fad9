package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/snapshot"
)

// diffCmd is `temco diff DIG A [B]`: what changed in a DIG's configuration from one of
// its snapshots to another (GET DIG/snapshots/A/diff/B), or to the newest.
func diffCmd() *cobra.Command {
	var api, token, output string
	cmd := &cobra.Command{
		Use:   "diff DIG SNAPSHOT [SNAPSHOT]",
		Short: "Show what changed in a DIG's configuration from one snapshot to another (or to the newest)",
		Long: `Show what changed in a deployment intent group's configuration between two of its
snapshots (GET DIG/snapshots lists them), resource by resource and field by field.
With one snapshot, compare it with the newest (the snapshot of the latest revision).

DIG is the DIG's URL (http://host:9015/v2/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig)
or its path (/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig), on --api.`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			dig, err := digURL(api, args[0])
			if err != nil {
				return err
			}
			c := &snapshotClient{http: &http.Client{Timeout: time.Minute}, dig: dig, token: token}
			from, to := args[1], ""
			if len(args) == 3 {
				to = args[2]
			} else if to, err = c.newest(cmd.Context()); err != nil {
				return err
			}
			var diff snapshotDiff
			if err := c.get(cmd.Context(), "/snapshots/"+url.PathEscape(from)+"/diff/"+url.PathEscape(to), &diff); err != nil {
				return err
			}
			if output == "json" {
				e := json.NewEncoder(cmd.OutOrStdout())
				e.SetIndent("", "  ")
				return e.Encode(diff)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), formatDiff(diff))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&api, "api", env("TEMCO_API", defaultAPI), "temco API base URL, for a DIG given by its path [TEMCO_API]")
	f.StringVarP(&token, "token", "t", env("TEMCO_TOKEN", ""), "bearer token, when the API requires one (prefer the variable: flags show in ps) [TEMCO_TOKEN]")
	f.StringVarP(&output, "output", "o", "text", "text (readable) or json (the API's answer)")
	return cmd
}

// snapshotDiff is the API's answer to GET DIG/snapshots/A/diff/B.
type snapshotDiff struct {
	From    string            `json:"from"`
	To      string            `json:"to"`
	Changes []snapshot.Change `json:"changes"`
}

// digURL is the URL of the DIG arg names: its URL, or its path (with or without /v2) on
// api.
func digURL(api, arg string) (string, error) {
	base := strings.TrimSuffix(api, "/")
	path := arg
	if u, err := url.Parse(arg); err == nil && u.Scheme != "" && u.Host != "" {
		base, path = u.Scheme+"://"+u.Host, u.Path
	}
	path = "/" + strings.Trim(path, "/")
	path = strings.TrimPrefix(path, "/v2")
	if t := lifecycle.DIGOfID(path); t.DIG == "" || t.ID() != path {
		return "", fmt.Errorf("%q is not a DIG: give its URL or its path, /projects/P/composite-apps/CA/VERSION/deployment-intent-groups/DIG", arg)
	}
	return base + "/v2" + path, nil
}

// snapshotClient reads a DIG's snapshots.
type snapshotClient struct {
	http       *http.Client
	dig, token string
}

// newest is the id of the DIG's newest snapshot.
func (c *snapshotClient) newest(ctx context.Context) (string, error) {
	var list []struct {
		ID string `json:"id"`
	}
	if err := c.get(ctx, "/snapshots?limit=1", &list); err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("%s has no snapshot yet: its first instantiate takes one", c.dig)
	}
	return list[0].ID, nil
}

// get reads the JSON answer to GET DIG+path into v; an error answer becomes the API's
// message.
func (c *snapshotClient) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.dig+path, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &m) != nil || m.Message == "" {
			m.Message = strings.TrimSpace(string(data))
		}
		return fmt.Errorf("GET %s: %d %s", req.URL.Path, resp.StatusCode, m.Message)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("GET %s: the answer is not what temco answers: %w", req.URL.Path, err)
	}
	return nil
}

// formatDiff writes a diff for people: a heading, then each changed resource and its
// fields, "~" changed, "+" added, "-" removed, values as JSON.
func formatDiff(d snapshotDiff) string {
	var b strings.Builder
	switch n := len(d.Changes); n {
	case 0:
		fmt.Fprintf(&b, "%s → %s: no change\n", d.From, d.To)
		return b.String()
	case 1:
		fmt.Fprintf(&b, "%s → %s: 1 change\n", d.From, d.To)
	default:
		fmt.Fprintf(&b, "%s → %s: %d changes\n", d.From, d.To, n)
	}
	last := ""
	for _, c := range d.Changes {
		if c.Resource != last {
			fmt.Fprintf(&b, "\n%s\n", c.Resource)
			last = c.Resource
		}
		if c.Path == "" { // the whole resource
			fmt.Fprintf(&b, "  %s %s %s\n", sign(c.Op), c.Op, kindOf(c.From, c.To))
			continue
		}
		switch c.Op {
		case snapshot.Added:
			fmt.Fprintf(&b, "  + %s: %s\n", c.Path, compact(c.To))
		case snapshot.Removed:
			fmt.Fprintf(&b, "  - %s: %s\n", c.Path, compact(c.From))
		default:
			fmt.Fprintf(&b, "  ~ %s: %s → %s\n", c.Path, compact(c.From), compact(c.To))
		}
	}
	return b.String()
}

func sign(op string) string {
	switch op {
	case snapshot.Added:
		return "+"
	case snapshot.Removed:
		return "-"
	}
	return "~"
}

// kindOf names the kind of a whole resource added or removed ("" when it has none).
func kindOf(values ...any) string {
	for _, v := range values {
		if m, ok := v.(map[string]any); ok {
			if k, ok := m["kind"].(string); ok {
				return "(" + k + ")"
			}
		}
	}
	return ""
}

func compact(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
