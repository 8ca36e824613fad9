package devstack

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/dev/testenv/poll"
)

// startGitOpsAlone starts the git server and the GitOps cluster of a stack on dataDir,
// without Temporal, FerretDB or temco, and stops them when the test ends.
func startGitOpsAlone(t *testing.T, dataDir string, base int) *Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a local cluster and Flux")
	}
	bin, err := filepath.Abs("../../../.bin") // internal/dev/devstack
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{cfg: Config{BinDir: bin, DataDir: dataDir, ClusterBasePort: base, GitOps: true}}
	s.configureGitOps()
	if err := s.checkBinaries(); err != nil {
		t.Fatal(err)
	}
	if err := s.checkPorts(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Cleanup(s.stopGitOps)
	if err := s.startGitOps(ctx); err != nil {
		t.Fatalf("start: %v (logs under %s)", err, dataDir)
	}
	return s
}

func freeBase(t *testing.T) int {
	t.Helper()
	base, err := FreeClusterBase(1)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// A deployment written as EMCO's rsync writes it — a Flux Kustomization kust<cid>.yaml
// next to the bootstrap's files, its manifests under context/<cid>/ — reaches the cluster
// through Flux, applied by its own Kustomization only: the seeded context/kustomization.yaml
// keeps the bootstrap Kustomization out of context/.
func TestGitOpsClusterAppliesWhatIsPushed(t *testing.T) {
	s := startGitOpsAlone(t, t.TempDir(), freeBase(t))
	g := s.GitOps
	ctx := context.Background()
	dc, err := g.Cluster.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	boot, err := dc.Resource(KustomizationResource).Namespace(fluxNamespace).Get(ctx, fluxName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if status, message := readyCondition(boot); status != "True" {
		t.Fatalf("the bootstrap Kustomization is not Ready after Start: %s %s", status, message)
	}

	kust := `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: kust123
  namespace: flux-system
spec:
  interval: 10s
  path: ./` + g.Path() + `/context/123
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`
	configMap := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hello","namespace":"default"},"data":{"greeting":"hi"}}`
	if err := g.Commit(ctx, map[string]string{
		g.Path() + "/kust123.yaml":                             kust,
		g.Path() + "/context/123/app/web/hello+ConfigMap.yaml": configMap,
	}, "Commit for "+g.Path()+"/context/123/app/web/"); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitApplied(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	cs, err := g.Cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the ConfigMap applied by Flux", 2*time.Minute, func(ctx context.Context) error {
		cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if owner := cm.Labels["kustomize.toolkit.fluxcd.io/name"]; owner != "kust123" || cm.Data["greeting"] != "hi" {
			return fmt.Errorf("ConfigMap hello applied by %q with data %v, want kust123's", owner, cm.Data)
		}
		return nil
	})
}

// A restart on the same data keeps the git password, seeds nothing twice and finds
// Flux's bootstrap applied again.
func TestGitOpsClusterRestartsOnItsData(t *testing.T) {
	dir, base := t.TempDir(), freeBase(t)
	first := startGitOpsAlone(t, dir, base)
	password := first.GitOps.Password
	ctx := context.Background()
	head, err := first.Git.Git(ctx, gitOpsRepo, "rev-parse", gitOpsBranch)
	if err != nil {
		t.Fatal(err)
	}
	first.stopGitOps()

	second := startGitOpsAlone(t, dir, base)
	if second.GitOps.Password != password {
		t.Error("the git password changed with the restart")
	}
	again, err := second.Git.Git(ctx, gitOpsRepo, "rev-parse", gitOpsBranch)
	if err != nil {
		t.Fatal(err)
	}
	if again != head {
		log, _ := second.Git.Git(ctx, gitOpsRepo, "log", "--oneline", gitOpsBranch)
		t.Errorf("the restart committed again:\n%s", strings.TrimSpace(log))
	}
}
