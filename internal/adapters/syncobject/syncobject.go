// Package syncobject reads a cluster provider's cluster-sync-objects as EMCO's GitOps
// plugins do: the git access of a GitOps cluster (its reference object) and its Flux
// timers (its resource object).
package syncobject

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Values flattens a sync object's spec.kv, a list of one-key objects; as in EMCO, the
// first item naming a key wins. secrets (the sealed values of secret keys, opened) replace
// the masks stored in the body.
func Values(kv []map[string]any, secrets map[string]string) map[string]string {
	out := map[string]string{}
	for _, item := range kv {
		for k, v := range item {
			if _, seen := out[k]; !seen {
				out[k] = fmt.Sprint(v)
			}
		}
	}
	for k, v := range secrets {
		out[k] = v
	}
	return out
}

// GitKeys are the keys EMCO requires of a GitOps cluster's reference object.
var GitKeys = []string{"userName", "gitToken", "repoName", "branch", "url"}

// Git is where a GitOps cluster's desired state is written.
type Git struct {
	URL, Branch, User, Token, Repo string
	Type                           string // "github" or "" (plain git), as EMCO's gitType
}

// Missing lists the keys of GitKeys that values lacks (empty values count as missing).
func Missing(values map[string]string) []string {
	var out []string
	for _, k := range GitKeys {
		if values[k] == "" {
			out = append(out, k)
		}
	}
	return out
}

// GitOf reads the git access from a reference object's values. EMCO's gitType "github"
// drives GitHub's REST API; temco pushes over git's HTTP protocol everywhere, so for
// GitHub the clone URL is built from url, userName and repoName unless url already names
// a repository.
func GitOf(values map[string]string) (Git, error) {
	if m := Missing(values); len(m) > 0 {
		return Git{}, fmt.Errorf("missing %s", strings.Join(m, ", "))
	}
	g := Git{URL: values["url"], Branch: values["branch"], User: values["userName"], Token: values["gitToken"],
		Repo: values["repoName"], Type: strings.ToLower(values["gitType"])}
	if g.Type == "github" && !strings.HasSuffix(g.URL, ".git") {
		g.URL = strings.TrimSuffix(g.URL, "/") + "/" + g.User + "/" + g.Repo + ".git"
	}
	return g, nil
}

// Timers are a Flux Kustomization's timers from a resource object (EMCO's keys timeOut,
// syncInterval and retryInterval, in seconds; 60 each when absent).
type Timers struct {
	Timeout, Interval, RetryInterval time.Duration
}

// defaultTimer is EMCO's value of each timer.
const defaultTimer = 60 * time.Second

// TimersOf reads the timers; a value that is not a positive whole number of seconds is an error.
func TimersOf(values map[string]string) (Timers, error) {
	t := Timers{defaultTimer, defaultTimer, defaultTimer}
	for key, into := range map[string]*time.Duration{"timeOut": &t.Timeout, "syncInterval": &t.Interval, "retryInterval": &t.RetryInterval} {
		v, ok := values[key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return Timers{}, fmt.Errorf("%s %q is not a positive number of seconds", key, v)
		}
		*into = time.Duration(n) * time.Second
	}
	return t, nil
}

// Types of GitOps access temco accepts in a cluster's spec.gitOps.gitOpsType.
const (
	FluxCD     = "fluxcd"
	AzureArcV2 = "azureArcV2"
	Anthos     = "anthos"
)

// Type normalises spec.gitOps.gitOpsType: EMCO's code takes "fluxcd" where its docs
// say "fluxv2"; both mean Flux. ok is false for a type temco does not know.
func Type(t string) (string, bool) {
	switch t {
	case FluxCD, "fluxv2":
		return FluxCD, true
	case AzureArcV2, Anthos:
		return t, true
	}
	return "", false
}
