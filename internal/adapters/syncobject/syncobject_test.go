package syncobject

import (
	"testing"
	"time"
)

func TestValuesFirstKeyWinsAndSecretsReplaceMasks(t *testing.T) {
	v := Values([]map[string]any{{"url": "http://a"}, {"url": "http://b"}, {"gitToken": "********"}, {"timeOut": 30}},
		map[string]string{"gitToken": "t0k"})
	if v["url"] != "http://a" || v["gitToken"] != "t0k" || v["timeOut"] != "30" {
		t.Fatalf("values %v", v)
	}
}

func TestGitOf(t *testing.T) {
	if _, err := GitOf(map[string]string{"url": "http://x", "branch": "main"}); err == nil || err.Error() != "missing userName, gitToken, repoName" {
		t.Fatalf("err %v", err)
	}
	g, err := GitOf(map[string]string{"url": "https://github.com/", "branch": "main", "userName": "alice", "gitToken": "t",
		"repoName": "fleet", "gitType": "GitHub"})
	if err != nil || g.URL != "https://github.com/alice/fleet.git" || g.Type != "github" {
		t.Fatalf("%+v %v", g, err)
	}
	g, _ = GitOf(map[string]string{"url": "http://h/git/r.git", "branch": "b", "userName": "u", "gitToken": "t", "repoName": "r"})
	if g.URL != "http://h/git/r.git" {
		t.Fatalf("plain git url rewritten: %s", g.URL)
	}
}

func TestTimers(t *testing.T) {
	tm, err := TimersOf(map[string]string{"syncInterval": "10"})
	if err != nil || tm.Interval != 10*time.Second || tm.Timeout != time.Minute || tm.RetryInterval != time.Minute {
		t.Fatalf("%+v %v", tm, err)
	}
	if _, err := TimersOf(map[string]string{"timeOut": "1m"}); err == nil {
		t.Fatal("1m accepted as seconds")
	}
}

func TestType(t *testing.T) {
	for in, want := range map[string]string{"fluxcd": FluxCD, "fluxv2": FluxCD, "azureArcV2": AzureArcV2, "anthos": Anthos} {
		if got, ok := Type(in); !ok || got != want {
			t.Errorf("Type(%q) = %q %v", in, got, ok)
		}
	}
	if _, ok := Type("azureArc"); ok {
		t.Error("azureArc accepted")
	}
}
