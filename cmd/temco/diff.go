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

	"github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
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
			base, dig, err := digOf(api, args[0])
			if err != nil {
				return err
			}
			c := &client.Client{Base: base, Token: token, HTTP: &http.Client{Timeout: time.Minute}}
			from, to := args[1], ""
			if len(args) == 3 {
				to = args[2]
			} else if to, err = newest(cmd.Context(), c, dig); err != nil {
				return err
			}
			diff, err := c.SnapshotDiff(cmd.Context(), dig, from, to)
			if err != nil {
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

// digOf is the API's base URL and the DIG's path that arg names: its URL, or its path
// (with or without /v2) on api.
func digOf(api, arg string) (base, dig string, err error) {
	base, path := strings.TrimSuffix(api, "/"), arg
	if u, err := url.Parse(arg); err == nil && u.Scheme != "" && u.Host != "" {
		base, path = u.Scheme+"://"+u.Host, u.Path
	}
	path = "/" + strings.Trim(path, "/")
	path = strings.TrimPrefix(path, "/v2")
	if t := lifecycle.DIGOfID(path); t.DIG == "" || t.ID() != path {
		return "", "", fmt.Errorf("%q is not a DIG: give its URL or its path, /projects/P/composite-apps/CA/VERSION/deployment-intent-groups/DIG", arg)
	}
	return base, path, nil
}

// newest is the id of the DIG's newest snapshot.
func newest(ctx context.Context, c *client.Client, dig string) (string, error) {
	list, err := c.Snapshots(ctx, dig, 1)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("%s has no snapshot yet: its first instantiate takes one", c.Base+"/v2"+dig)
	}
	return list[0].ID, nil
}

// formatDiff writes a diff for people: a heading, then each changed resource and its
// fields, "~" changed, "+" added, "-" removed, values as JSON.
func formatDiff(d client.SnapshotDiff) string {
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
		case client.ChangeAdded:
			fmt.Fprintf(&b, "  + %s: %s\n", c.Path, compact(c.To))
		case client.ChangeRemoved:
			fmt.Fprintf(&b, "  - %s: %s\n", c.Path, compact(c.From))
		default:
			fmt.Fprintf(&b, "  ~ %s: %s → %s\n", c.Path, compact(c.From), compact(c.To))
		}
	}
	return b.String()
}

func sign(op string) string {
	switch op {
	case client.ChangeAdded:
		return "+"
	case client.ChangeRemoved:
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
