package chaos

import (
	"os"
	"path/filepath"
	"testing"
)

// The audit reader counts only successful server-side applies of temco's field manager.
func TestAuditAppliesReadsTemcosSuccessfulApplies(t *testing.T) {
	log := `{"kind":"Event","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/namespaces/default/configmaps/a?fieldManager=temco\u0026force=true","objectRef":{"resource":"configmaps","namespace":"default","name":"a"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-29T01:00:00.000001Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/namespaces/default/configmaps/b?fieldManager=temco","objectRef":{"resource":"configmaps","namespace":"default","name":"b"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-29T01:00:01Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/namespaces/default/configmaps/c?fieldManager=temco\u0026force=true","objectRef":{"resource":"configmaps","namespace":"default","name":"c"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-11-29T01:00:02Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/namespaces/default/configmaps/d?fieldManager=kubectl","objectRef":{"resource":"configmaps","namespace":"default","name":"d"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-29T01:00:03Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/namespaces/default/configmaps/e?fieldManager=temco-autoscaler","objectRef":{"resource":"configmaps","namespace":"default","name":"e"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-29T01:00:04Z"}
not json
`
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := auditApplies(t, path)
	if len(got) != 2 || got[0].name != "a" || got[1].name != "b" || got[0].at.Nanosecond() != 1000 {
		t.Errorf("applies %+v, want a and b", got)
	}
}

func TestSplitOpIDKeepsOperationsOfTheRunsTargets(t *testing.T) {
	for id, want := range map[string]string{
		"dig/chaos-c0/d1/v1/dig/update/ctx9":             "dig/chaos-c0/d1/v1/dig update",
		"logical-cloud/chaos-lc/lc2/terminate/ctx3":      "logical-cloud/chaos-lc/lc2 terminate",
		"dig/chaos-c0/d1/v1/dig":                         "",
		"dig/chaos-c0/d1/v1/dig/update/ctx9/batch/0":     "",
		"dig/chaos-c0/d1/v1/dig/approve/ctx9":            "",
		"dig/other/d1/v1/dig/update/ctx9":                "",
		"logical-cloud/chaos-c0/default/instantiate/ctx": "logical-cloud/chaos-c0/default instantiate",
	} {
		target, op, ok := splitOpID(id)
		if got := target + " " + op; ok != (want != "") || ok && got != want {
			t.Errorf("%s: %q %v, want %q", id, got, ok, want)
		}
	}
}
