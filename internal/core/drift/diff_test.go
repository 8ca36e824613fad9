package drift

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

// live objects are decoded as client-go decodes them: integers as int64.
func liveObj(t *testing.T, s string) map[string]any {
	t.Helper()
	m := obj(t, s)
	var fix func(v any) any
	fix = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = fix(e)
			}
		case []any:
			for i, e := range x {
				x[i] = fix(e)
			}
		case float64:
			if x == float64(int64(x)) {
				return int64(x)
			}
		}
		return v
	}
	return fix(m).(map[string]any)
}

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment",
 "metadata":{"name":"web","namespace":"default","creationTimestamp":null,"labels":{"emco/deployment-id":"1-web","app.kubernetes.io/name":"web"}},
 "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
  "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"web:1","args":["a","b"],
   "resources":{"limits":{"cpu":"0.5","memory":"128Mi"}},"ports":[{"containerPort":80}]}]}}},
 "status":{}}`

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name          string
		desired, live string
		want          []Field
	}{
		{
			name:    "in sync, with what the server adds ignored",
			desired: deployment,
			live: `{"apiVersion":"apps/v1","kind":"Deployment",
			 "metadata":{"name":"web","namespace":"default","uid":"u","resourceVersion":"7","generation":3,"creationTimestamp":"2026-11-24T10:00:00Z",
			  "managedFields":[{"manager":"temco"}],"labels":{"emco/deployment-id":"1-web","app.kubernetes.io/name":"web"},"annotations":{"deployment.kubernetes.io/revision":"1"}},
			 "spec":{"replicas":2,"progressDeadlineSeconds":600,"selector":{"matchLabels":{"app":"web"}},"strategy":{"type":"RollingUpdate"},
			  "template":{"metadata":{"labels":{"app":"web"}},"spec":{"restartPolicy":"Always","containers":[{"name":"main","image":"web:1","args":["a","b"],
			   "imagePullPolicy":"IfNotPresent","resources":{"limits":{"cpu":"500m","memory":"128Mi"}},"ports":[{"containerPort":80,"protocol":"TCP"}]}]}}},
			 "status":{"replicas":2,"availableReplicas":2}}`,
		},
		{
			name:    "a changed field, with both values",
			desired: `{"kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2}}`,
			live:    `{"kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5}}`,
			want:    []Field{{Path: "spec.replicas", Live: "5", Desired: "2"}},
		},
		{
			name:    "a field removed from the live object",
			desired: `{"kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","b":"2"}}`,
			live:    `{"kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}`,
			want:    []Field{{Path: "data.b", Desired: `"2"`}},
		},
		{
			name:    "a label with dots, changed",
			desired: `{"kind":"ConfigMap","metadata":{"name":"c","labels":{"app.kubernetes.io/name":"web"}}}`,
			live:    `{"kind":"ConfigMap","metadata":{"name":"c","labels":{"app.kubernetes.io/name":"shop"}}}`,
			want:    []Field{{Path: `metadata.labels["app.kubernetes.io/name"]`, Live: `"shop"`, Desired: `"web"`}},
		},
		{
			name:    "a named list element changed, matched by name whatever its position",
			desired: `{"kind":"Pod","spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}`,
			live:    `{"kind":"Pod","spec":{"containers":[{"name":"b","image":"b:2"},{"name":"a","image":"a:1"}]}}`,
			want:    []Field{{Path: "spec.containers[name=b].image", Live: `"b:2"`, Desired: `"b:1"`}},
		},
		{
			name:    "a named list element removed",
			desired: `{"kind":"Pod","spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}`,
			live:    `{"kind":"Pod","spec":{"containers":[{"name":"a","image":"a:1"}]}}`,
			want:    []Field{{Path: "spec.containers[name=b]", Desired: `{"image":"b:1","name":"b"}`}},
		},
		{
			name:    "a list of objects without names, by position",
			desired: `{"kind":"Service","spec":{"ports":[{"port":80},{"port":443}]}}`,
			live:    `{"kind":"Service","spec":{"ports":[{"port":80,"protocol":"TCP"},{"port":8443,"protocol":"TCP"}]}}`,
			want:    []Field{{Path: "spec.ports[1].port", Live: "8443", Desired: "443"}},
		},
		{
			name:    "a list of scalars is one value",
			desired: `{"kind":"Pod","spec":{"args":["a","b"]}}`,
			live:    `{"kind":"Pod","spec":{"args":["a","c","d"]}}`,
			want:    []Field{{Path: "spec.args", Live: `["a","c","d"]`, Desired: `["a","b"]`}},
		},
		{
			name:    "a type changed",
			desired: `{"kind":"X","spec":{"v":{"a":1}}}`,
			live:    `{"kind":"X","spec":{"v":"a"}}`,
			want:    []Field{{Path: "spec.v", Live: `"a"`, Desired: `{"a":1}`}},
		},
		{
			name:    "null and empty values in the manifest set nothing",
			desired: `{"kind":"X","metadata":{"creationTimestamp":null},"spec":{"a":null,"b":{},"c":[]}}`,
			live:    `{"kind":"X","metadata":{"creationTimestamp":"2026-11-24T10:00:00Z"},"spec":{}}`,
		},
		{
			name:    "a Secret's data is compared but never shown",
			desired: `{"kind":"Secret","metadata":{"name":"s","labels":{"a":"1"}},"data":{"password":"c2VjcmV0"},"stringData":{"token":"t0ps3cret"}}`,
			live:    `{"kind":"Secret","metadata":{"name":"s","labels":{"a":"2"}},"data":{"password":"b3RoZXI=","token":"dDBwczNjcmV0"}}`,
			want: []Field{{Path: "data.password", Redacted: true},
				{Path: "metadata.labels.a", Live: `"2"`, Desired: `"1"`}},
		},
		{
			name:    "a Secret's stringData compares as the data it becomes",
			desired: `{"kind":"Secret","stringData":{"token":"t0ps3cret"}}`,
			live:    `{"kind":"Secret","data":{"token":"b3RoZXI="}}`,
			want:    []Field{{Path: "data.token", Redacted: true}},
		},
		{
			name:    "a Secret's data key deleted",
			desired: `{"kind":"Secret","data":{"password":"c2VjcmV0"}}`,
			live:    `{"kind":"Secret"}`,
			want:    []Field{{Path: "data", Redacted: true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(obj(t, tc.desired), liveObj(t, tc.live))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			for _, f := range got {
				if strings.Contains(f.Live+f.Desired, "c2VjcmV0") || strings.Contains(f.Live+f.Desired, "t0ps3cret") ||
					strings.Contains(f.Live+f.Desired, "b3RoZXI") {
					t.Errorf("a Secret's value is reported: %+v", f)
				}
			}
		})
	}
}

// A long value is cut: a report names what changed, it is no copy of the object.
func TestLongValuesAreCut(t *testing.T) {
	long := strings.Repeat("x", 2000)
	got := Compare(map[string]any{"data": map[string]any{"k": long}}, map[string]any{"data": map[string]any{"k": "y"}})
	if len(got) != 1 || len(got[0].Desired) > maxValue+len("…") {
		t.Errorf("got %d fields, desired of %d bytes", len(got), len(got[0].Desired))
	}
}
