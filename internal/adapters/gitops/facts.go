package gitops

// What temco knows of a GitOps cluster it cannot reach: the monitor beside the cluster
// writes the cluster's facts to its status branch, beside the status files — its
// Kubernetes version and API versions (what charts are rendered for) and its OpenAPI
// schema (which fields an object may carry there: server-side apply, Flux's too, refuses
// the whole object for one it does not declare).

// Facts is the file FactsPath holds. Its JSON keys are its field names.
type Facts struct {
	// KubeVersion is the server's version, e.g. "v1.35.4".
	KubeVersion string
	// APIVersions are the served group-versions and kinds, as Helm's
	// .Capabilities.APIVersions lists them ("v1", "apps/v1", "apps/v1/Deployment"), sorted.
	APIVersions []string
	// Schemas maps each OpenAPI v3 group-version path ("api/v1", "apis/apps/v1") to the
	// sha256 of its document, which SchemaPath holds.
	Schemas map[string]string
}

// FactsDir is the directory of a cluster's facts on its status branch.
func FactsDir(cluster string) string { return "clusters/" + cluster + "/facts/" }

// FactsPath is the file of a cluster's Facts.
func FactsPath(cluster string) string { return FactsDir(cluster) + "cluster.json" }

// SchemaPath is the file of the OpenAPI v3 document of a cluster whose sha256 is sum
// (hex): documents are named by content, so a document that did not change is not
// written again.
func SchemaPath(cluster, sum string) string { return FactsDir(cluster) + "openapi/" + sum + ".json" }
