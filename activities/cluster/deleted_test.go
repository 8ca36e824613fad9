package cluster

import "testing"

// A delete's answer says whether the object is gone: removed at once (the object as it
// was, or a Status), or marked and waiting (finalizers, a grace period), then read until
// gone; an answer that does not parse is read until gone too.
func TestADeletesAnswerSaysWhetherTheObjectIsGone(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"kind":"ConfigMap","metadata":{"name":"a"}}`: true,
		`{"kind":"Status","status":"Success"}`:         true,
		`{"kind":"ConfigMap","metadata":{"name":"a","deletionTimestamp":"2026-12-06T12:00:00Z","finalizers":["x"]}}`:        false,
		`{"kind":"Pod","metadata":{"name":"p","deletionTimestamp":"2026-12-06T12:00:00Z","deletionGracePeriodSeconds":30}}`: false,
		`not json`: false,
	} {
		if got := deletedAtOnce([]byte(raw)); got != want {
			t.Errorf("%s: gone %v, want %v", raw, got, want)
		}
	}
}
