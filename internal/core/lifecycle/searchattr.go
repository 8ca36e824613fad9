package lifecycle

import (
	"go.temporal.io/sdk/temporal"
)

// Search attributes every lifecycle workflow carries, so runs can be found in the
// Temporal Web UI and with `temporal workflow list --query`.
var (
	AttrProject      = temporal.NewSearchAttributeKeyKeyword("project")
	AttrCompositeApp = temporal.NewSearchAttributeKeyKeyword("compositeApp")
	AttrVersion      = temporal.NewSearchAttributeKeyKeyword("version")
	AttrDIG          = temporal.NewSearchAttributeKeyKeyword("dig")
	AttrOperation    = temporal.NewSearchAttributeKeyKeyword("operation")
	AttrLogicalCloud = temporal.NewSearchAttributeKeyKeyword("logicalCloud")
	AttrCluster      = temporal.NewSearchAttributeKeyKeyword("cluster") // "provider+cluster": network intents
	// A CA certificate intent's name, and the cluster provider of a provider's certificate
	// (a project's carries project); the workflow id says enrolment or distribution.
	AttrCACert          = temporal.NewSearchAttributeKeyKeyword("caCert")
	AttrClusterProvider = temporal.NewSearchAttributeKeyKeyword("clusterProvider")
)

// SearchAttributes of an operation on a target (those that apply to its kind).
func SearchAttributes(d Target, op string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(append(d.Kind().attrs(d), AttrOperation.ValueSet(op))...)
}

// SearchAttributeTypes lists the attributes to register on the Temporal server.
func SearchAttributeTypes() map[string]string {
	out := map[string]string{}
	for _, k := range []temporal.SearchAttributeKeyKeyword{AttrProject, AttrCompositeApp, AttrVersion, AttrDIG, AttrOperation, AttrLogicalCloud, AttrCluster,
		AttrCACert, AttrClusterProvider} {
		out[k.GetName()] = "Keyword"
	}
	return out
}
