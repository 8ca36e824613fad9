package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/gitserver"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

const (
	gitUser  = "monitor"
	gitToken = "tok-9c1e55a0d3f84b27"
)

// gitServer is a real git server (git-http-backend) that counts the requests it serves,
// so that a test can tell a pass that did not touch git.
type gitServer struct {
	*gitserver.Server
	url      string
	requests atomic.Int64
}

// startGit serves repository "gitops", holding branch main only.
func startGit(t *testing.T) *gitServer {
	t.Helper()
	g := &gitServer{Server: &gitserver.Server{Root: t.TempDir(), Users: map[string]string{gitUser: gitToken}}}
	if err := g.CreateRepo(context.Background(), "gitops", "main"); err != nil {
		t.Fatal(err)
	}
	backend := g.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL + "/git/gitops.git"
	return g
}

// head is the commit branch points to on the server; "" when it does not exist.
func (g *gitServer) head(t *testing.T, branch string) string {
	t.Helper()
	out, err := g.Git(context.Background(), "gitops", "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return out
}

// startCluster starts a real local cluster (etcd, kube-apiserver, controllers) with
// Flux's Kustomization definition installed.
func startCluster(t *testing.T) *rest.Config {
	t.Helper()
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	c := &devstack.Cluster{Name: "gitops1", BinDir: bin, Dir: t.TempDir(), BasePort: freeBase(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Cleanup(c.Stop)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start cluster: %v (logs under %s)", err, c.Dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, dc, awaitKustomizationCRD(t, bin))
	poll.Until(t, "Kustomizations served", time.Minute, func(ctx context.Context) error {
		_, err := dc.Resource(kustomizations).List(ctx, metav1.ListOptions{})
		return err
	})
	return cfg
}

// awaitKustomizationCRD reads Flux's Kustomization definition, which `tools/build.sh flux`
// may still be building into .bin/crds/flux.
func awaitKustomizationCRD(t *testing.T, bin string) []byte {
	t.Helper()
	path := filepath.Join(bin, "crds", "flux", "kustomize.toolkit.fluxcd.io_kustomizations.yaml")
	var data []byte
	poll.Until(t, "Flux's Kustomization CRD built", 15*time.Minute, func(context.Context) error {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return fmt.Errorf("%w (run tools/build.sh flux)", err)
		}
		if !bytes.Contains(data, []byte("kind: CustomResourceDefinition")) {
			return fmt.Errorf("%s is still being written", path)
		}
		return nil
	})
	return data
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the definitions of a YAML stream.
func installCRDs(t *testing.T, dc dynamic.Interface, yaml []byte) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(yaml), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := dc.Resource(crdResource).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", u.GetName(), err)
		}
	}
}

func freeBase(t *testing.T) int {
	t.Helper()
	base, err := devstack.FreeClusterBase(1)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// logBuffer collects a logger's output written from another goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// readStatus reads the status files on the cluster's status branch, by namespace/name.
func readStatus(ctx context.Context, reader *gitops.Writer, r gitops.Remote, cluster string) (map[string]gitops.KustomizationStatus, error) {
	files, _, err := reader.ReadDir(ctx, r, gitops.StatusDir(cluster))
	if err != nil {
		return nil, err
	}
	out := map[string]gitops.KustomizationStatus{}
	for path, b := range files {
		var k gitops.KustomizationStatus
		if err := json.Unmarshal(b, &k); err != nil {
			return nil, fmt.Errorf("status file %s: %w", path, err)
		}
		if want := k.Namespace + "/" + k.Name + ".json"; path != want {
			return nil, fmt.Errorf("status file %s holds the status of %s/%s", path, k.Namespace, k.Name)
		}
		out[k.Namespace+"/"+k.Name] = k
	}
	return out, nil
}
