package cluster

import (
	"fmt"
	"testing"

	"github.com/temco/temco/internal/appctx"
)

// Objects are applied in groups, each after the one before: Namespaces, CRDs, what
// workloads use, then workloads (and deleted in the reverse order).
func TestWorkloadsAreAppliedAfterWhatTheyUse(t *testing.T) {
	kinds := []string{"Deployment", "ConfigMap", "Namespace", "Service", "CronJob", "CustomResourceDefinition", "Secret", "Widget", "StatefulSet"}
	objs := make([]appctx.Object, len(kinds))
	for i, k := range kinds {
		objs[i].Kind = k
	}
	var got [][]string
	for _, g := range applyGroups(objs) {
		var names []string
		for _, i := range g {
			names = append(names, kinds[i])
		}
		got = append(got, names)
	}
	want := "[[Namespace] [CustomResourceDefinition] [ConfigMap Service Secret Widget] [Deployment CronJob StatefulSet]]"
	if fmt.Sprint(got) != want {
		t.Errorf("groups %v, want %s", got, want)
	}
}
