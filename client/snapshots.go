package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Snapshot describes one of a DIG's configuration snapshots: the revisions it produced
// (oldest first), and when and by which operation it was first and last recorded.
type Snapshot struct {
	ID        string             `json:"id"`
	Revisions []SnapshotRevision `json:"revisions"`
	Created   time.Time          `json:"created"`
	Operation string             `json:"operation"`
	Updated   time.Time          `json:"updated"`
}

// SnapshotRevision is a revision a snapshot produced, with its context and the
// operation that made it.
type SnapshotRevision struct {
	Revision  int64     `json:"revision"`
	ContextID string    `json:"contextId"`
	Operation string    `json:"operation"`
	Time      time.Time `json:"time"`
}

// SnapshotDiff is what changed from one snapshot of a DIG to another.
type SnapshotDiff struct {
	From    string   `json:"from"`
	To      string   `json:"to"`
	Changes []Change `json:"changes"`
}

// Change is one difference between two snapshots: a resource added or removed (Path
// ""), or one of its fields added, removed or changed.
type Change struct {
	Resource string `json:"resource"`
	Path     string `json:"path"`
	Op       string `json:"op"` // ChangeAdded, ChangeRemoved or ChangeChanged
	From     any    `json:"from,omitempty"`
	To       any    `json:"to,omitempty"`
}

// The operations of a Change.
const (
	ChangeAdded   = "added"
	ChangeRemoved = "removed"
	ChangeChanged = "changed"
)

// Snapshots lists the DIG's newest snapshots, newest first, at most limit of them.
func (c *Client) Snapshots(ctx context.Context, dig string, limit int) ([]Snapshot, error) {
	var list []Snapshot
	err := c.Do(ctx, Request{Method: http.MethodGet, Path: dig + "/snapshots?limit=" + strconv.Itoa(limit)}, &list)
	return list, err
}

// SnapshotDiff reads what changed in the DIG's configuration from snapshot from to
// snapshot to.
func (c *Client) SnapshotDiff(ctx context.Context, dig, from, to string) (SnapshotDiff, error) {
	var d SnapshotDiff
	err := c.Do(ctx, Request{Method: http.MethodGet, Path: dig + "/snapshots/" + url.PathEscape(from) + "/diff/" + url.PathEscape(to)}, &d)
	return d, err
}
