// Package model holds the EMCO v2 resource types exchanged over the REST API and
// stored in MongoDB. JSON field names follow EMCO so existing clients keep working;
// the store encodes the same structs to BSON using these JSON tags.
package model

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/artifact"
)

// Metadata is common to every EMCO resource.
type Metadata struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	UserData1   string `json:"userData1"`
	UserData2   string `json:"userData2"`
}

// Resource is the wire shape of every EMCO resource: metadata plus a kind-specific spec.
type Resource[S any] struct {
	Metadata Metadata `json:"metadata"`
	Spec     S        `json:"spec"`
}

// nameRE is EMCO's resource name syntax.
var nameRE = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)

// MaxNameLen is the longest accepted resource name.
const MaxNameLen = 128

// ValidateName checks a resource (or path segment) name; what names the field in the message.
func ValidateName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is required", what)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%s %.20q... is longer than %d characters", what, name, MaxNameLen)
	case !nameRE.MatchString(name):
		return fmt.Errorf("%s %q is invalid: use letters, digits, '-', '_' and '.', starting and ending with a letter or digit", what, name)
	}
	return nil
}

// Limits of free text, in characters as EMCO's JSON schemas count them
// (orchestrator's and clm's metadata.json, clm's cluster-kv.json).
const (
	MaxDescriptionLen = 1024
	MaxUserDataLen    = 512 // userData1 and userData2
	MaxKVValueLen     = 128
	// MaxKVKeyLen is temco's: EMCO bounds no key. A key names a setting
	// (istioIngressGatewayAddress), so a value's limit fits it too.
	MaxKVKeyLen = 128
)

// ValidateLen checks that s is at most max characters long; what names the field.
func ValidateLen(what, s string, max int) error {
	if n := utf8.RuneCountInString(s); n > max {
		return fmt.Errorf("%s is %d characters long: the limit is %d", what, n, max)
	}
	return nil
}

// Validate checks the metadata of a resource being stored: its name and the length of
// its free text.
func (m Metadata) Validate() error {
	if err := ValidateName("metadata.name", m.Name); err != nil {
		return err
	}
	for _, f := range []struct {
		what, value string
		max         int
	}{
		{"metadata.description", m.Description, MaxDescriptionLen},
		{"metadata.userData1", m.UserData1, MaxUserDataLen},
		{"metadata.userData2", m.UserData2, MaxUserDataLen},
	} {
		if err := ValidateLen(f.what, f.value, f.max); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a resource being stored: its metadata, and the free text of specs
// that carry some (kv-pairs).
func (r Resource[S]) Validate() error {
	if err := r.Metadata.Validate(); err != nil {
		return err
	}
	if t, ok := any(r.Spec).(interface{ validateText() error }); ok {
		return t.validateText()
	}
	return nil
}

// Empty is the spec of resources that have none (projects, cluster providers, ...).
type Empty struct{}

// CompositeAppSpec names the version of a composite app.
type CompositeAppSpec struct {
	Version string `json:"compositeAppVersion"`
}

// ClusterSpec carries gitOps access data (empty for a cluster reached with its
// kubeconfig, which travels separately); always present, as in EMCO's answers.
type ClusterSpec struct {
	GitOps GitOpsSpec `json:"gitOps"`
	// Access is how temco reaches the cluster (temco's): AccessKubernetes (its kubeconfig),
	// AccessGitOps (spec.gitOps) or AccessAgent (a temco agent inside it calls home; no
	// credential is held centrally). Sent as AccessAgent to register an agent cluster,
	// else filled in from the rest of the registration.
	Access string `json:"access,omitempty"`
}

// How a cluster is reached (ClusterSpec.Access).
const (
	AccessKubernetes = "kubernetes"
	AccessGitOps     = "gitops"
	AccessAgent      = "agent"
)

// AccessOf is how the cluster is reached, for registrations stored before Access was.
func (s ClusterSpec) AccessOf() string {
	switch {
	case s.Access == AccessAgent:
		return AccessAgent
	case s.IsGitOps():
		return AccessGitOps
	}
	return AccessKubernetes
}

// IsGitOps reports whether the cluster is reached through a git repository.
func (s ClusterSpec) IsGitOps() bool { return s.GitOps.GitOpsType != "" }

// GitOpsSpec is EMCO's gitOps cluster access description, kept for compatibility, and
// temco's choice of what goes to git.
type GitOpsSpec struct {
	GitOpsType            string `json:"gitOpsType"`
	GitOpsReferenceObject string `json:"gitOpsReferenceObject"`
	GitOpsResourceObject  string `json:"gitOpsResourceObject"`
	// GitOpsSecrets says what becomes of a deployment's Secrets: GitOpsSecretsCommit (""
	// too, EMCO's behaviour) commits them in clear like every other object,
	// GitOpsSecretsOmit leaves them out of git.
	GitOpsSecrets string `json:"gitOpsSecrets,omitempty"`
}

// Values of GitOpsSpec.GitOpsSecrets.
const (
	GitOpsSecretsCommit = "commit"
	GitOpsSecretsOmit   = "omit"
)

// ClusterLabel is the body of CL/labels; it has no metadata.
type ClusterLabel struct {
	Label string `json:"clusterLabel"`
}

// KVSpec is the body of kv-pairs resources.
type KVSpec struct {
	KV []map[string]any `json:"kv"`
}

// validateText bounds the keys and string values of the pairs (other values are
// bounded by the request's size).
func (s KVSpec) validateText() error {
	for i, kv := range s.KV {
		for _, k := range slices.Sorted(maps.Keys(kv)) { // the same offender named on every try
			if err := ValidateLen(fmt.Sprintf("spec.kv[%d] key %.20q...", i, k), k, MaxKVKeyLen); err != nil {
				return err
			}
			if v, ok := kv[k].(string); ok {
				if err := ValidateLen(fmt.Sprintf("spec.kv[%d].%s", i, k), v, MaxKVValueLen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ControllerSpec registers a placement or action controller.
type ControllerSpec struct {
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	Type     string `json:"type,omitempty"`
	Priority int    `json:"priority,omitempty"`
	// TaskQueue (temco): an external controller implemented as a Temporal activity
	// worker on this task queue instead of an EMCO gRPC host/port.
	TaskQueue string `json:"taskQueue,omitempty"`
}

// Controller types: the contract's, one spelling for both.
const (
	ControllerPlacement = contract.TypePlacement
	ControllerAction    = contract.TypeAction
)

// AppSpec is an app's: EMCO's has none (the chart is the multipart upload); temco's
// Chart names where the chart comes from instead.
type AppSpec struct {
	Chart *artifact.Source `json:"chart,omitempty"`
}

// ArtifactCredentialSpec is a project's login to a registry or repository host; the
// password is sealed at rest and masked in answers.
type ArtifactCredentialSpec struct {
	Host     string `json:"host"`
	Username string `json:"username"`
	Password string `json:"password,omitempty"`
}

// AppProfileSpec names the app an app profile belongs to; temco's Archive names where
// the profile's archive comes from instead of EMCO's upload (a URL with its digest).
type AppProfileSpec struct {
	App     string           `json:"app"`
	Archive *artifact.Source `json:"archive,omitempty"`
}

// AppDependencySpec makes an app wait for another app on the same cluster.
type AppDependencySpec struct {
	App      string `json:"app"`
	OpStatus string `json:"opStatus"`
	Wait     int    `json:"wait,omitempty"`
}

// Dependency operational states an app may wait for.
const (
	OpStatusReady    = "Ready"
	OpStatusDeployed = "Deployed"
)

// DIGSpec is a deployment intent group's spec.
type DIGSpec struct {
	CompositeProfile string           `json:"compositeProfile"`
	Version          string           `json:"version"`
	LogicalCloud     string           `json:"logicalCloud"`
	OverrideValues   []OverrideValues `json:"overrideValues,omitempty"`
	// DriftDetection (temco's own; EMCO has none) checks the DIG's objects on its clusters
	// against what it applied, every Interval.
	DriftDetection *DriftDetection `json:"driftDetection,omitempty"`
	// ImagePinning (temco's own) pins the container images the DIG's objects name to
	// their digests, once per revision: every cluster of a revision runs the same bits.
	ImagePinning *ImagePinning `json:"imagePinning,omitempty"`
}

// ImagePinning: when Enabled, each image tag is resolved to its digest at the registry
// (through the admin's artifact hosts, with the project's artifact credentials) and the
// image rewritten name:tag@sha256:...; PlainHTTP lists the registries (host:port) that
// speak http.
type ImagePinning struct {
	Enabled   bool     `json:"enabled"`
	PlainHTTP []string `json:"plainHTTP,omitempty"`
}

// DriftDetection schedules drift checks of an instantiated DIG: Interval is a duration
// ("10m", at least a minute); CorrectDrift re-applies what drifted.
type DriftDetection struct {
	Interval     string `json:"interval"`
	CorrectDrift bool   `json:"correctDrift,omitempty"`
}

// OverrideValues sets Helm values ("a.b.c": "v") of one app of the DIG.
type OverrideValues struct {
	App    string            `json:"app"`
	Values map[string]string `json:"values"`
}

// DIGIntentSpec maps intent kinds (controllers) to intent names.
type DIGIntentSpec struct {
	Intent map[string]string `json:"intent"`
}

// GenericPlacementIntentKey is the DIG intent key naming the generic placement intent.
const GenericPlacementIntentKey = "genericPlacementIntent"

// GenericPlacementIntentSpec is kept for EMCO compatibility (older clients send logicalCloud).
type GenericPlacementIntentSpec struct {
	LogicalCloud string `json:"logicalCloud,omitempty"`
}

// AppIntentSpec places one app.
type AppIntentSpec struct {
	App    string          `json:"app"`
	Intent PlacementIntent `json:"intent"`
}

// PlacementIntent: every allOf entry applies; exactly one cluster among anyOf is picked.
type PlacementIntent struct {
	AllOf []AllOf        `json:"allOf,omitempty"`
	AnyOf []ClusterMatch `json:"anyOf,omitempty"`
}

// AllOf is a cluster match that may itself carry a nested anyOf choice.
type AllOf struct {
	ClusterMatch `json:",inline"`
	AnyOf        []ClusterMatch `json:"anyOf,omitempty"`
}

// ClusterMatch selects clusters of a provider by name or by label.
type ClusterMatch struct {
	ClusterProvider string `json:"clusterProvider,omitempty"`
	Cluster         string `json:"cluster,omitempty"`
	ClusterLabel    string `json:"clusterLabel,omitempty"`
}

// LogicalCloudSpec describes a logical cloud: a namespace on a set of clusters.
type LogicalCloudSpec struct {
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"` // put on the cloud's namespace
	Level     string            `json:"level"`            // "0": admin (cluster credentials), "1": standard or privileged
	User      LogicalCloudUser  `json:"user,omitzero"`
}

// LogicalCloudUser is the identity a standard or privileged cloud's credential carries.
type LogicalCloudUser struct {
	UserName string `json:"userName,omitempty"`
	Type     string `json:"type,omitempty"` // "certificate"
}

// Logical cloud levels.
const (
	LevelAdmin    = "0"
	LevelStandard = "1"
)

// ClusterReferenceSpec puts a registered cluster into a logical cloud.
type ClusterReferenceSpec struct {
	ClusterProvider string `json:"clusterProvider"`
	Cluster         string `json:"cluster"`
	LoadBalancerIP  string `json:"loadBalancerIP,omitempty"` // EMCO's examples send loadbalancerIp: JSON names match regardless of case
	Certificate     string `json:"certificate,omitempty"`
}

// UserPermissionSpec grants the cloud's user a rule; an empty namespace makes it
// cluster-wide (a privileged cloud).
type UserPermissionSpec struct {
	Namespace string   `json:"namespace"`
	APIGroups []string `json:"apiGroups"`
	Resources []string `json:"resources"`
	Verbs     []string `json:"verbs"`
}

// ClusterQuotaSpec holds ResourceQuota "hard" limits, e.g. {"limits.cpu": "400", "pods": "500"}.
type ClusterQuotaSpec map[string]string
