package gitops

// The status return path. A monitor next to each GitOps cluster (package monitor) writes
// what the cluster's Flux Kustomizations report to the cluster's status branch, one file
// per Kustomization; temco's workers read them back (temco cannot reach such a cluster).

// KustomizationStatus is the status of one Flux Kustomization, as a monitor writes it to
// StatusPath on StatusBranch. Its JSON keys are its field names. It holds no timestamps,
// so that an idle cluster's status does not change.
type KustomizationStatus struct {
	Namespace, Name                string
	Generation, ObservedGeneration int64
	// Ready is the status of the Ready condition ("True", "False", "Unknown"; "" when
	// absent); Reason and Message are the condition's.
	Ready           string
	Reason, Message string
	// The revisions Flux applied and last tried, e.g. "main@sha1:<hash>" (see Contains).
	LastAppliedRevision, LastAttemptedRevision string
	Suspended                                  bool
	// Resources are the objects of the Kustomization's inventory, as found on the cluster.
	Resources []ResourceStatus
}

// ResourceStatus is one object a Kustomization applied.
type ResourceStatus struct {
	Group, Version, Kind, Namespace, Name string
	Present                               bool   // the object exists on the cluster
	Ready                                 bool   // the object is ready (temco's rule for directly reached clusters)
	Message                               string // why it is not, when cheap to say
}

// StatusBranch is the branch the monitor of cluster ("<provider>+<cluster>") writes to,
// named after the cluster as EMCO's monitor does.
func StatusBranch(cluster string) string { return cluster }

// StatusDir is the directory of a cluster's status files on its status branch.
func StatusDir(cluster string) string { return "clusters/" + cluster + "/status/" }

// StatusPath is the file of the status of Kustomization namespace/name of cluster.
func StatusPath(cluster, namespace, name string) string {
	return StatusDir(cluster) + namespace + "/" + name + ".json"
}
