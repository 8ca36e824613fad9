// Package events is what temco tells operators, as plain values (workflow code reads
// them): the events its operations, rollouts, drift checks, probes, autoscalers, policies
// and artifact pipeline raise, the receivers a project or an admin subscribes to them
// (their spec and filters), a receiver's delivery status, and the bodies sent to each
// (CloudEvents 1.0, signed, or a Slack-compatible message). What is stored, and the
// Emitter the activities raise events with, is events/feed; delivery is features/notify's
// workflow, one per receiver.
package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// The types of events, as receivers' filters name them (the CloudEvents type is
// "io.temco." and the type).
const (
	OperationStarted   = "operation.started"
	OperationSucceeded = "operation.succeeded"
	OperationFailed    = "operation.failed"
	// StageWaiting: a rollout stage waits for an approval before it starts.
	StageWaiting = "rollout.stage.waiting"
	// RolledBack: a failed rollout returned the clusters it changed on its own.
	RolledBack         = "rollout.rolledback"
	DriftFound         = "drift.found"
	DriftCorrected     = "drift.corrected"
	ClusterUnreachable = "cluster.unreachable"
	ClusterReachable   = "cluster.reachable"
	AutoscalerDecision = "autoscaler.decision"
	PolicyAction       = "policy.action"
	// ArtifactFailed: a chart by reference failed its verification (digest, provenance).
	ArtifactFailed = "artifact.verification.failed"
)

// Types are every event type, in the order the docs list them.
var Types = []string{OperationStarted, OperationSucceeded, OperationFailed, StageWaiting, RolledBack,
	DriftFound, DriftCorrected, ClusterUnreachable, ClusterReachable, AutoscalerDecision, PolicyAction, ArtifactFailed}

// Event is one thing that happened. Project is empty for the fleet's own events (a
// cluster's reachability): only admins' receivers get those.
type Event struct {
	ID   string    `json:"id"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Resource is the REST path (below /v2) of what it is about: a DIG, a logical cloud,
	// a cluster. Project, CompositeApp, Version and DIG name the deployment, if any.
	Resource     string `json:"resource"`
	Project      string `json:"project,omitempty"`
	CompositeApp string `json:"compositeApp,omitempty"`
	Version      string `json:"compositeAppVersion,omitempty"`
	DIG          string `json:"deploymentIntentGroup,omitempty"`
	// Cluster is "provider+cluster" when the event is about one cluster, and
	// ClusterLabels its labels (what receivers' clusterLabels filters match).
	Cluster       string   `json:"cluster,omitempty"`
	ClusterLabels []string `json:"clusterLabels,omitempty"`
	// Summary is one line for people (a Slack message's text).
	Summary string `json:"summary"`
	// Details are the event type's own facts (an operation's context and error, a stage's
	// name, drift's counts...): plain values, never secrets.
	Details map[string]any `json:"details,omitempty"`
}

// ID derives an event's id from what makes it unique (a context id and the type, a
// check's id...): the same event raised twice (an activity retried) has the same id,
// which the feed, the delivery workflows and receivers deduplicate on.
func ID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// DIGKey is "project/compositeApp/version/dig" for an event about a DIG ("" otherwise):
// the order delivery keeps.
func (e *Event) DIGKey() string {
	if e.DIG == "" {
		return ""
	}
	return e.Project + "/" + e.CompositeApp + "/" + e.Version + "/" + e.DIG
}

// About fills in what the event is about from a resource's store id (its REST path
// below /v2): the project of one below a project, and the deployment of a DIG
// ("/projects/p/composite-apps/ca/v/deployment-intent-groups/d").
func (e *Event) About(id string) *Event {
	e.Resource = id
	parts := strings.Split(strings.TrimPrefix(id, "/"), "/")
	if len(parts) >= 2 && parts[0] == "projects" {
		e.Project = parts[1]
	}
	if len(parts) == 7 && parts[2] == "composite-apps" && parts[5] == "deployment-intent-groups" {
		e.CompositeApp, e.Version, e.DIG = parts[3], parts[4], parts[6]
	}
	return e
}

// AboutCluster fills in the cluster ("provider+cluster") and its labels.
func (e *Event) AboutCluster(key string, labels []string) *Event {
	e.Cluster, e.ClusterLabels = key, labels
	if e.Resource == "" {
		provider, name, _ := strings.Cut(key, "+")
		e.Resource = "/cluster-providers/" + provider + "/clusters/" + name
	}
	return e
}

// Name is what the event is about, for people: "project/compositeApp/version/dig" for a
// DIG, the cluster, or the resource's path.
func (e *Event) Name() string {
	switch {
	case e.DIG != "":
		return e.DIGKey()
	case e.Cluster != "":
		return e.Cluster
	}
	return e.Resource
}

// ScopeOf is the project of a receiver's store id ("/projects/p/notification-receivers/r"),
// "" for an admin's ("/notification-receivers/r").
func ScopeOf(receiver string) string {
	if rest, ok := strings.CutPrefix(receiver, "/projects/"); ok {
		p, _, _ := strings.Cut(rest, "/")
		return p
	}
	return ""
}
