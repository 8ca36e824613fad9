package flow

import (
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Cluster inventories (temco's own; docs/inventory.md): one ClusterInventory workflow per
// inventory resource, started when it is stored, that every sync interval keeps the
// provider's clusters in step with the hub's ClusterProfiles and publishes every DIG's
// clusters there as PlacementDecisions (SyncInventory), until the resource is
// deleted or the workflow gets SignalStop. SignalWake syncs at once.
const (
	WorkflowInventory = "ClusterInventory"
	OpInventory       = "inventory" // the operation search attribute of inventories

	inventoryPrefix = "inventory/"
)

// InventoryInput names an inventory: its cluster provider and name.
type InventoryInput struct {
	Provider string `json:"provider"`
	Name     string `json:"name"`
}

// WorkflowID is the id of the inventory's workflow.
func (in InventoryInput) WorkflowID() string { return inventoryPrefix + in.Provider + "/" + in.Name }

// ID is the inventory's store id.
func (in InventoryInput) ID() string {
	return "/cluster-providers/" + in.Provider + "/cluster-inventories/" + in.Name
}

// InventorySynced is what one sync did: Gone when the inventory no longer exists (the
// workflow ends), the interval until the next, and a summary for the workflow's log.
type InventorySynced struct {
	Gone     bool          `json:"gone,omitempty"`
	Interval time.Duration `json:"interval"`
	Summary  string        `json:"summary"`
	// Evict are the Instantiated DIGs placed on a cluster whose profile went away in this
	// sync, by label: the workflow updates each, and placement no longer selects it.
	Evict []lifecycle.Target `json:"evict,omitempty"`
}

// InventoryStatus is an inventory's last sync, recorded in its document and answered by
// its status route: each profile and what became of its cluster, and the decisions
// written.
type InventoryStatus struct {
	Synced    time.Time        `json:"synced"`
	Error     string           `json:"error,omitempty"` // the hub could not be read
	Profiles  []ProfileStatus  `json:"profiles"`
	Decisions []DecisionStatus `json:"decisions"`
	// Evictions are what became of the DIGs placed on a cluster whose profile went away
	// in this sync.
	Evictions []EvictionStatus `json:"evictions,omitempty"`
}

// EvictionStatus is a DIG placed on a cluster whose profile went away: updated (by its
// placements by label, which no longer select the cluster), or kept, and why.
type EvictionStatus struct {
	DIG     string `json:"dig"`
	Cluster string `json:"cluster"` // provider+name
	Action  string `json:"action"`  // EvictionUpdate or EvictionKept
	Reason  string `json:"reason,omitempty"`
}

// Eviction actions.
const (
	EvictionUpdate = "update"
	EvictionKept   = "kept"
)

// ProfileStatus is one ClusterProfile and its cluster in temco.
type ProfileStatus struct {
	Profile string   `json:"profile"`
	Cluster string   `json:"cluster"`          // provider+name
	State   string   `json:"state"`            // one of the Profile* states
	Reason  string   `json:"reason,omitempty"` // why it is not Registered
	Labels  []string `json:"labels,omitempty"` // the cluster's labels from the profile
}

// Profile states.
const (
	ProfileRegistered = "Registered" // healthy; the cluster has its credentials and labels
	ProfileUnhealthy  = "Unhealthy"  // its control plane is not healthy: out of placements
	ProfileRemoved    = "Removed"    // the profile is gone: out of placements
	ProfileSkipped    = "Skipped"    // temco cannot use it (no usable access, a name taken)
)

// DecisionStatus is a DIG's PlacementDecisions on the hub.
type DecisionStatus struct {
	DIG      string `json:"dig"` // store id
	Key      string `json:"key"` // the decision-key label of its slices
	Slices   int    `json:"slices"`
	Clusters int    `json:"clusters"`
}

func init() { lifecycle.DeclareWorkflows(WorkflowInventory) }

// work (work.Activities): one sync of a cluster inventory.
var byInventory = lifecycle.Implementer{Package: "features/inventory/work", Struct: "Activities"}

var SyncInventory = lifecycle.Declare[InventoryInput, InventorySynced](byInventory, "SyncInventory")
