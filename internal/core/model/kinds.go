package model

import (
	"encoding/json"
	"fmt"
)

// Store kinds of the resources (the "kind" field of stored documents).
const (
	KindClusterProvider  = "clusterProvider"
	KindCluster          = "cluster"
	KindClusterLabel     = "clusterLabel"
	KindClusterKV        = "clusterKV"
	KindClusterSyncObj   = "clusterSyncObject"
	KindClmController    = "clmController"
	KindProject          = "project"
	KindCompositeApp     = "compositeApp"
	KindApp              = "app"
	KindAppDependency    = "appDependency"
	KindCompositeProfile = "compositeProfile"
	KindAppProfile       = "appProfile"
	KindController       = "controller"
	KindDIG              = "deploymentIntentGroup"
	KindDIGIntent        = "deploymentIntent"
	KindGPI              = "genericPlacementIntent"
	KindAppIntent        = "appPlacementIntent"
	KindLogicalCloud     = "logicalCloud"
	KindClusterReference = "clusterReference"
	KindUserPermission   = "userPermission"
	KindClusterQuota     = "clusterQuota"
	KindLogicalCloudKV   = "logicalCloudKV"
	// KindRolloutStrategy is temco's own: a DIG's staged rollout (internal/core/rollout).
	KindRolloutStrategy = "rolloutStrategy"
	// KindCapacityPlacement is temco's own: the clusters a DIG's workloads run on, chosen
	// from their capacity (internal/core/capacity).
	KindCapacityPlacement = "capacityPlacement"
	// KindClusterInventory is temco's own: a hub of ClusterProfiles a cluster provider's
	// clusters are kept in step with (internal/core/inventory).
	KindClusterInventory = "clusterInventory"
	// EMCO's policy controller: agents streaming events (global, admin-only) and a DIG's
	// policy intents; KindPolicy is temco's own, a project's Rego module for the embedded
	// engine (internal/core/policy).
	KindPolicyAgent  = "policyAgent"
	KindPolicyIntent = "policyIntent"
	KindPolicy       = "policy"
	// KindArtifactCredential is temco's own: a project's user and password (sealed) for
	// a registry or repository host its charts come from (internal/core/artifact).
	KindArtifactCredential = "artifactCredential"
	// KindNotificationReceiver is temco's own: where a project's events (an admin's: the
	// fleet's) are sent (internal/core/events).
	KindNotificationReceiver = "notificationReceiver"
)

// Decode parses a stored resource body.
func Decode[S any](body string) (Resource[S], error) {
	var r Resource[S]
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return r, fmt.Errorf("decode stored resource: %w", err)
	}
	return r, nil
}
