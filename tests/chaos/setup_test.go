package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/devstack"
)

// register onboards the fleet and the projects (before any kill), each DIG project with an
// admin logical cloud "default" over every cluster; it returns the clusters' names: the
// direct ones, the GitOps one, then the agent one.
func register(t *testing.T, c *client, projects []string) []string {
	t.Helper()
	must := func(a answer, what string) {
		t.Helper()
		if !a.ok() {
			t.Fatalf("%s: %s", what, a)
		}
	}
	must(c.do("POST", "/cluster-providers", res(provider, nil)), "provider")
	var names []string
	for _, cl := range stack.Clusters {
		kc, err := os.ReadFile(cl.Kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		must(c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res(cl.Name, nil), kc), "cluster "+cl.Name)
		names = append(names, cl.Name)
	}
	g := stack.GitOps
	sync := "/cluster-providers/" + provider + "/cluster-sync-objects"
	must(c.do("POST", sync, res("repo", map[string]any{"kv": []any{
		map[string]string{"url": g.URL()}, map[string]string{"branch": g.Branch}, map[string]string{"userName": g.User},
		map[string]string{"gitToken": g.Password}, map[string]string{"repoName": g.Repo}}})), "sync object")
	must(c.do("POST", sync, res("timers", map[string]any{"kv": []any{
		map[string]string{"timeOut": "20"}, map[string]string{"syncInterval": "5"}, map[string]string{"retryInterval": "5"}}})), "timers")
	must(c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res(g.Cluster.Name, map[string]any{"gitOps": map[string]string{
		"gitOpsType": "fluxcd", "gitOpsReferenceObject": "repo", "gitOpsResourceObject": "timers"}}), []byte("values: placeholder\n")), "GitOps cluster")
	names = append(names, g.Cluster.Name)

	// The agent cluster, registered by the stack: placed on like the others, it must be
	// reached only through its agent (no kubeconfig at the centre), and the agent joined.
	var reg struct {
		Spec struct {
			Access string `json:"access"`
		} `json:"spec"`
	}
	agentPath := "/cluster-providers/" + agentProvider + "/clusters/" + agentCluster
	if found, err := c.read(context.Background(), agentPath, &reg); err != nil || !found || reg.Spec.Access != "agent" {
		t.Fatalf("the agent cluster %s: found %v, access %q, %v", devstack.AgentClusterID(), found, reg.Spec.Access, err)
	}
	var st struct {
		State string `json:"state"`
	}
	if _, err := c.read(context.Background(), agentPath+"/agent", &st); err != nil || st.State != "joined" {
		t.Fatalf("the agent of %s: state %q, %v", devstack.AgentClusterID(), st.State, err)
	}
	names = append(names, agentCluster)

	for _, p := range projects {
		must(c.do("POST", "/projects", res(p, nil)), "project "+p)
		if p == "chaos-lc" {
			continue
		}
		lc := "/projects/" + p + "/logical-clouds/default"
		must(c.do("POST", "/projects/"+p+"/logical-clouds", res("default", map[string]any{"level": "0"})), "cloud")
		for _, cl := range names {
			must(c.do("POST", lc+"/cluster-references", res(cl, map[string]any{"clusterProvider": providerOf(cl), "cluster": cl})), "reference")
		}
		must(c.do("POST", lc+"/instantiate", nil), "instantiate the cloud")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range projects {
		if p == "chaos-lc" {
			continue
		}
		l := &cloudActor{c: c, project: p}
		for {
			s, _, err := l.status(ctx, "default")
			if err != nil {
				t.Fatal(err)
			}
			if s.DeployedStatus == "Instantiated" {
				break
			}
			if strings.HasSuffix(s.DeployedStatus, "Failed") {
				t.Fatalf("cloud of %s: %s", p, s.Error)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("cloud of %s not instantiated: %+v", p, s)
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
	return names
}

// usage is a witness process's goroutines and memory.
type usage struct {
	Goroutines int
	RSSKiB     int
	// Cached is the worker's count of workflows in its cache (the SDK's sticky cache): each
	// holds its coroutines while the workflow idles.
	Cached int
}

// witnesses reads the second api's and worker's usage: they are never killed, so their
// goroutines and memory show what the others' restarts left behind in them.
func witnesses(t *testing.T) map[string]usage {
	t.Helper()
	out := map[string]usage{}
	for name, pid := range map[string]int{"temco api 2": stack.MoreAPIs[0].Cmd.Process.Pid, "temco worker 2": stack.MoreWorkers[0].Cmd.Process.Pid} {
		u := usage{RSSKiB: procStatus(pid, "VmRSS")}
		addr := envOf(pid, "TEMCO_METRICS_ADDR")
		if strings.HasPrefix(name, "temco api") {
			addr = envOf(pid, "TEMCO_API_ADDR")
		}
		u.Goroutines = metric("http://"+addr+"/metrics", "go_goroutines")
		u.Cached = metric("http://"+addr+"/metrics", "temporal_sticky_cache_size")
		if u.Goroutines == 0 || u.RSSKiB == 0 {
			t.Fatalf("%s (pid %d): no usage read from %s", name, pid, addr)
		}
		out[name] = u
	}
	return out
}

func procStatus(pid int, field string) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}

// envOf is the value the process's environment gives name (the last one, as getenv reads it).
func envOf(pid int, name string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	v := ""
	for _, kv := range strings.Split(string(b), "\x00") {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s
		}
	}
	return v
}

// metric is the first value of the named metric url serves (0 when none).
func metric(url, name string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int(n)
		}
	}
	return 0
}
