package sfc

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/temco/temco/contract"
)

// Each kind's pods get the labels where that kind keeps them, created when the workload
// has none (EMCO panics there), the existing ones kept.
func TestLabelPodsCreatesOrExtendsThePodLabels(t *testing.T) {
	for _, tc := range []struct {
		kind, manifest string
		path           []string
	}{
		{"Deployment", `{"kind":"Deployment","metadata":{"name":"w"},"spec":{"template":{"spec":{"containers":[]}}}}`, []string{"spec", "template", "metadata", "labels"}},
		{"StatefulSet", `{"kind":"StatefulSet","metadata":{"name":"w"},"spec":{"template":{"metadata":{"labels":{"keep":"me"}}}}}`, []string{"spec", "template", "metadata", "labels"}},
		{"CronJob", `{"kind":"CronJob","metadata":{"name":"w"},"spec":{"jobTemplate":{"spec":{"template":{}}}}}`, []string{"spec", "jobTemplate", "spec", "template", "metadata", "labels"}},
		{"Pod", `{"kind":"Pod","metadata":{"name":"w"}}`, []string{"metadata", "labels"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			e, err := LabelPods(Workload{App: "a", Kind: tc.kind, Name: "w"}, []string{"p+c1"}, map[string]string{"sfc": "head"})
			require.NoError(t, err)
			assert.Equal(t, contract.Edit{Op: contract.EditPatch, App: "a", Clusters: []string{"p+c1"}, Kind: tc.kind, Name: "w",
				Type: contract.PatchMerge, Data: e.Data}, e)
			out, err := jsonpatch.MergePatch([]byte(tc.manifest), e.Data)
			require.NoError(t, err)
			var obj any
			require.NoError(t, json.Unmarshal(out, &obj))
			for _, k := range tc.path {
				obj = obj.(map[string]any)[k]
			}
			labels := obj.(map[string]any)
			assert.Equal(t, "head", labels["sfc"])
			if tc.kind == "StatefulSet" {
				assert.Equal(t, "me", labels["keep"])
			}
		})
	}
	_, err := LabelPods(Workload{App: "a", Kind: "Service", Name: "w"}, nil, map[string]string{"sfc": "head"})
	assert.ErrorContains(t, err, `"Service" is not a kind of workload`)
}

func TestCheckPodLabels(t *testing.T) {
	objs := []contract.Resource{
		{Kind: "Service", Name: "web", Manifest: json.RawMessage(`{"spec":{"selector":{"app":"web"}}}`)},
		{Kind: "Deployment", Name: "web", Manifest: json.RawMessage(`{"spec":{"selector":{"matchLabels":{"app":"web"}}}}`)},
		{Kind: "ReplicationController", Name: "rc", Manifest: json.RawMessage(`{"spec":{"selector":{"app":"rc"}}}`)},
		{Kind: "Job", Name: "job", Manifest: json.RawMessage(`{"spec":{"selector":{"matchLabels":{"controller-uid":"x"}}}}`)},
	}
	dep := Workload{App: "a", Kind: "Deployment", Name: "web"}
	for _, tc := range []struct {
		w      Workload
		labels map[string]string
		want   string
	}{
		{dep, map[string]string{"sfc": "head"}, ""},
		{dep, map[string]string{"app": "web"}, ""},
		{dep, map[string]string{"app": "slb"}, `label app=slb would make the pods of Deployment "web" of app "a" on cluster p+c1 leave its selector (app=web)`},
		{Workload{App: "a", Kind: "ReplicationController", Name: "rc"}, map[string]string{"app": "x"}, "leave its selector (app=rc)"},
		{Workload{App: "a", Kind: "Job", Name: "job"}, map[string]string{"controller-uid": "y"}, ""}, // generated, not the user's
		{Workload{App: "a", Kind: "Deployment", Name: "db"}, nil, `Deployment "db" of app "a" is not on cluster p+c1`},
		{Workload{App: "a", Kind: "StatefulSet", Name: "web"}, nil, `StatefulSet "web" of app "a" is not on cluster p+c1`},
	} {
		check(t, CheckPodLabels(tc.w, "p+c1", objs, tc.labels), tc.want)
	}
}
