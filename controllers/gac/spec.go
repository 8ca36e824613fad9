package gac

// The specs below keep EMCO's field names and string-typed flags ("true"/"false"), so
// EMCO's clients and files work unchanged.

// ResourceSpec names an object the intent creates or patches, and the app it belongs to.
type ResourceSpec struct {
	App         string `json:"app"`
	NewObject   string `json:"newObject"` // "true": create it; "false": patch the app's own
	ResourceGVK GVK    `json:"resourceGVK"`
}

// GVK identifies the object; Kind may be typed in any case, as EMCO accepts.
type GVK struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// CustomizationSpec says on which clusters and how a resource's object is customized.
type CustomizationSpec struct {
	ClusterSpecific  string           `json:"clusterSpecific"`
	ClusterInfo      ClusterInfo      `json:"clusterInfo"`
	PatchType        string           `json:"patchType,omitempty"` // json, merge or ""
	PatchJSON        []map[string]any `json:"patchJson,omitempty"` // RFC 6902 operations
	ConfigMapOptions DataOptions      `json:"configMapOptions"`
	SecretOptions    DataOptions      `json:"secretOptions"`
}

// ClusterInfo selects the app's clusters a cluster-specific customization applies to.
type ClusterInfo struct {
	Scope           string `json:"scope"` // label or name
	ClusterProvider string `json:"clusterProvider"`
	Cluster         string `json:"cluster"`
	ClusterLabel    string `json:"clusterLabel"`
	Mode            string `json:"mode"` // allow or deny (deny matches nothing, as in EMCO)
}

// DataOptions maps a customization's files to ConfigMap or Secret data keys.
type DataOptions struct {
	DataKeyOptions []KeyOption `json:"dataKeyOptions,omitempty"`
}

// KeyOption names the data key of one file, or marks it as a strategic merge patch.
type KeyOption struct {
	FileName   string `json:"fileName,omitempty"`
	KeyName    string `json:"keyName,omitempty"`
	MergePatch string `json:"mergePatch,omitempty"` // "true": the file patches the object
}

// Values of the string flags.
const (
	flagTrue  = "true"
	flagFalse = "false"

	scopeLabel = "label"
	scopeName  = "name"
	modeAllow  = "allow"
	modeDeny   = "deny"

	patchJSON  = "json"
	patchMerge = "merge"
)
