// Package production is the smoke test of temco on a production-shaped Temporal:
// temporal-server persisting to PostgreSQL with several history shards (not the CLI's
// single-shard dev server on SQLite), two temco api processes and two temco workers on
// one task queue. An operator's emcoctl file is applied through one api and deleted
// through the other; the first worker is killed between the two, and the second carries
// the terminate. The scale figures on the same setup come from `make bench-scale
// TEMPORAL=postgresql` (BENCHMARKS.md).
//
// The package starts its own local stack, so it runs beside the other test packages.
package production

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var stack *testenv.Stack

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("production: skipped in -short mode")
		os.Exit(0)
	}
	s, err := testenv.StartStack("production", devstack.Config{Clusters: 2, TemporalBackend: "postgresql", Replicas: 2,
		MongoBackend: "postgresql", Namespace: "default", TaskQueue: "temco", SearchAttributes: lifecycle.SearchAttributeTypes()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "production:", err)
		os.Exit(1)
	}
	stack = s
	code := m.Run()
	s.Stop(code != 0)
	os.Exit(code)
}

func TestAnEmcoctlSessionOnAProductionTemporalWithTwoApisAndWorkers(t *testing.T) {
	apis := []string{strings.TrimSuffix(stack.API, "/v2"), "http://127.0.0.1:" + strconv.Itoa(stack.APIPorts[0])}
	if pollers := workerPollers(t); pollers < 2 {
		t.Fatalf("%d worker processes poll the task queue, want 2", pollers)
	}

	dir := t.TempDir()
	apps := []string{"front", "back"}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	session, err := os.ReadFile("../testdata/emcoctl/session.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write("session.yaml", session)
	for _, a := range apps {
		write(a+".tgz", testenv.Chart(a, "message: default\n", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\n" +
			"metadata:\n  name: {{ .Chart.Name }}-config\ndata:\n  message: {{ .Values.message | quote }}\n"}))
	}
	write("profile.tgz", testenv.Profile("message: from-the-profile\n"))
	values := "Project: prod\nProvider: prod-provider\nLabel: prod\nApps: [" + strings.Join(apps, ", ") + "]\nClusters:\n"
	for _, cl := range stack.Clusters {
		values += "- {name: " + cl.Name + ", kubeconfig: " + cl.Kubeconfig() + "}\n"
	}
	write("values.yaml", []byte(values))

	temco(t, dir, apis[0], "apply", "-f", "session.yaml", "-v", "values.yaml", "--wait")
	dig := "/v2/projects/prod/composite-apps/shop/v1/deployment-intent-groups/shop-dig"
	var s struct {
		DeployedStatus string         `json:"deployedStatus"`
		DeployedCounts map[string]int `json:"deployedCounts"`
	}
	get(t, apis[1]+dig+"/status?status=deployed&output=summary", &s)
	if s.DeployedStatus != lifecycle.StatusInstantiated || s.DeployedCounts[lifecycle.ResApplied] != 4 {
		t.Fatalf("the other api says %s %v, want Instantiated with 4 objects Applied", s.DeployedStatus, s.DeployedCounts)
	}
	configMaps(t, "from-the-profile")

	// The first worker dies: the terminate, started through the other api, runs on the
	// second.
	if err := stack.Worker.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-stack.Worker.Done()
	temco(t, dir, apis[1], "delete", "-f", "session.yaml", "-v", "values.yaml")
	configMaps(t, "")
	resp, err := http.Get(apis[0] + "/v2/projects/prod")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("project after delete: %v %v, want 404", resp.StatusCode, err)
	}
}

// temco runs a client command of the temco binary against api.
func temco(t *testing.T, dir, api string, args ...string) {
	t.Helper()
	cmd := exec.Command(stack.Self(), append(args, "--api", api)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("temco %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("temco %s:\n%s", strings.Join(args, " "), out)
}

func get(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// configMaps checks both apps' ConfigMap on every cluster: with message want, or gone ("").
func configMaps(t *testing.T, want string) {
	t.Helper()
	for _, cl := range stack.Clusters {
		cs, err := cl.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{"front", "back"} {
			cm, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), a+"-config", metav1.GetOptions{})
			switch {
			case want == "" && !apierrors.IsNotFound(err):
				t.Errorf("%s on %s after delete: %v", a, cl.Name, err)
			case want != "" && (err != nil || cm.Data["message"] != want):
				t.Errorf("%s on %s: %v %v, want message %q", a, cl.Name, err, cm.Data, want)
			}
		}
	}
}

// workerPollers counts the worker processes polling the task queue (identities "<pid>@host").
func workerPollers(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: stack.Temporal.Address()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace: "default", TaskQueue: &taskqueuepb.TaskQueue{Name: "temco"}, TaskQueueType: enumspb.TASK_QUEUE_TYPE_ACTIVITY})
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]bool{}
	for _, p := range resp.GetPollers() {
		pid, _, _ := strings.Cut(p.GetIdentity(), "@")
		pids[pid] = true
	}
	return len(pids)
}
