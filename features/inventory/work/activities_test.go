package work

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	"github.com/temco/temco/features/inventory/flow"
	"github.com/temco/temco/internal/core/appctx"
	core "github.com/temco/temco/internal/core/inventory"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

const (
	ns         = "fleet"
	realServer = "https://member.example:6443"
	evilServer = "https://attacker.example:6443"
)

// A secretreader profile names a Secret of the namespace and the server its token is sent
// to: the token goes only to the cluster the Secret says it is for (its label, or the server
// it names), never to another profile's server; the refusal is the profile's status.
func TestATokenGoesOnlyToItsOwnCluster(t *testing.T) {
	ctx := context.Background()
	hubConfig, cs, dyn := startHub(t)
	a, in := newActivities(t, hubConfig)

	secret := func(name string, labels map[string]string, data map[string]string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, StringData: data}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("member", map[string]string{core.LabelClusterProfile: "member"}, map[string]string{"token": "member-token"})
	secret("pinned", nil, map[string]string{"token": "pinned-token", core.ServerKey: realServer})
	secret("loose", nil, map[string]string{"token": "loose-token"})
	profiles := dyn.Resource(profilesGVR).Namespace(ns)
	put := func(name, secret, server string) { putProfile(t, profiles, name, secret, server) }
	put("member", "member", realServer)
	put("thief", "member", evilServer) // another profile naming member's Secret
	put("pinned", "pinned", realServer)
	put("pinned-thief", "pinned", evilServer)
	put("loose", "loose", realServer)

	st := syncOnce(t, a, in)
	for profile, want := range map[string]string{
		"member":       flow.ProfileRegistered,
		"pinned":       flow.ProfileRegistered,
		"thief":        `Secret "member" is labelled x-k8s.io/cluster-profile=member`,
		"pinned-thief": `Secret "pinned" is for server "` + realServer + `", not "` + evilServer + `"`,
		"loose":        `Secret "loose" is not labelled x-k8s.io/cluster-profile`,
	} {
		if got := st.reason(profile); !strings.Contains(got, want) {
			t.Errorf("profile %s: %q, want %q", profile, got, want)
		}
	}
	for cluster, token := range map[string]string{"member": "member-token", "pinned": "pinned-token"} {
		if server, tok := kubeconfigOf(t, a, cluster); server != realServer || tok != token {
			t.Errorf("cluster %s reaches %s with %q", cluster, server, tok)
		}
	}
	for _, cluster := range []string{"thief", "pinned-thief", "loose"} {
		if _, err := a.Store.Get(ctx, "/cluster-providers/inv/clusters/"+cluster); store.CodeOf(err) != store.ErrNotFound {
			t.Errorf("cluster %s registered (%v)", cluster, err)
		}
	}

	// A registered profile moved to another server keeps its cluster's credentials where
	// they were: refused, the stored kubeconfig untouched.
	put("pinned", "pinned", evilServer)
	st = syncOnce(t, a, in)
	if got := st.reason("pinned"); !strings.Contains(got, "is for server") {
		t.Errorf("pinned moved to another server: %q", got)
	}
	if server, tok := kubeconfigOf(t, a, "pinned"); server != realServer || tok != "pinned-token" {
		t.Errorf("after its move, pinned reaches %s with %q", server, tok)
	}
}

var profilesGVR = v1alpha1.GroupVersion.WithResource("clusterprofiles")

// startHub starts a real cluster, which has the ClusterProfile definition as every local
// cluster, with namespace ns; it returns its admin kubeconfig and clients.
func startHub(t *testing.T) ([]byte, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	base, err := devstack.FreeClusterBase(1)
	if err != nil {
		t.Fatal(err)
	}
	c := &devstack.Cluster{Name: "hub", BinDir: bin, Dir: t.TempDir(), BasePort: base}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Cleanup(c.Stop)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start the hub: %v (logs under %s)", err, c.Dir)
	}
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := c.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	return kc, cs, dyn
}

// newActivities stores provider "inv" and its inventory "hub" of namespace ns, reaching
// the hub with hubConfig, sealed as the API seals it.
func newActivities(t *testing.T, hubConfig []byte) (*Activities, flow.InventoryInput) {
	t.Helper()
	ctx := context.Background()
	db := testenv.Database(t, ferret, "inventory")
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	contexts, err := appctx.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keys, err := seal.NewKeyring([]string{"test"}, [][]byte{key})
	if err != nil {
		t.Fatal(err)
	}
	in := flow.InventoryInput{Provider: "inv", Name: "hub"}
	provider := "/cluster-providers/inv"
	if err := st.Create(ctx, &store.Doc{ID: provider, Kind: model.KindClusterProvider, Name: "inv", Body: `{"metadata":{"name":"inv"}}`}); err != nil {
		t.Fatal(err)
	}
	sealed, err := keys.Seal(hubConfig, []byte(in.ID()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(model.Resource[core.Spec]{Metadata: model.Metadata{Name: "hub"}, Spec: core.Spec{Namespace: ns}})
	if err := st.Create(ctx, &store.Doc{ID: in.ID(), Parent: provider, Scope: provider, Kind: model.KindClusterInventory, Name: "hub",
		Body: string(body), Secret: sealed}); err != nil {
		t.Fatal(err)
	}
	return &Activities{Store: st, Contexts: contexts, Keys: keys}, in
}

// putProfile creates or updates a healthy profile whose secretreader access names Secret
// secret and server.
func putProfile(t *testing.T, profiles dynamic.ResourceInterface, name, secret, server string) {
	t.Helper()
	ctx := context.Background()
	cur, err := profiles.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		p := &v1alpha1.ClusterProfile{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterProfile"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       v1alpha1.ClusterProfileSpec{DisplayName: name, ClusterManager: v1alpha1.ClusterManager{Name: "test"}}}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		if cur, err = profiles.Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := v1alpha1.ClusterProfileStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ClusterConditionControlPlaneHealthy, Status: metav1.ConditionTrue,
			Reason: "Probed", Message: "probed by the test", LastTransitionTime: metav1.Now()}},
		AccessProviders: []v1alpha1.AccessProvider{{Name: core.ProviderSecretReader, Cluster: clientcmdv1.Cluster{Server: server,
			Extensions: []clientcmdv1.NamedExtension{{Name: "client.authentication.k8s.io/exec",
				Extension: runtime.RawExtension{Raw: []byte(`{"clusterName":"` + secret + `"}`)}}}}}},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		t.Fatal(err)
	}
	cur.Object["status"] = u
	if _, err := profiles.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// synced is the inventory's status after a sync.
type synced flow.InventoryStatus

// reason is a profile's state, and its reason when it has one.
func (s synced) reason(profile string) string {
	for _, p := range s.Profiles {
		if p.Profile == profile {
			if p.Reason == "" {
				return p.State
			}
			return p.State + ": " + p.Reason
		}
	}
	return "not in the status"
}

func syncOnce(t *testing.T, a *Activities, in flow.InventoryInput) synced {
	t.Helper()
	ctx := context.Background()
	if _, err := a.SyncInventory(ctx, in); err != nil {
		t.Fatal(err)
	}
	d, err := a.Store.Get(ctx, in.ID())
	if err != nil {
		t.Fatal(err)
	}
	var st synced
	if err := json.Unmarshal([]byte(d.State), &st); err != nil {
		t.Fatal(err)
	}
	if st.Error != "" {
		t.Fatalf("the sync failed: %s", st.Error)
	}
	return st
}

// kubeconfigOf opens a registered cluster's kubeconfig: the server it reaches, its token.
func kubeconfigOf(t *testing.T, a *Activities, cluster string) (server, token string) {
	t.Helper()
	id := "/cluster-providers/inv/clusters/" + cluster
	d, err := a.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("cluster %s: %v", cluster, err)
	}
	raw, err := a.Keys.Open(d.Secret, []byte(id))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Host, cfg.BearerToken
}
