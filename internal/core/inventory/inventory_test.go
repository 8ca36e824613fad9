package inventory

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	"github.com/temco/temco/internal/core/rollout"
)

func TestSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Namespace: "fleet"}, ""},
		{Spec{Namespace: ""}, "spec.namespace"},
		{Spec{Namespace: "fleet", ClusterManager: "ocm", SyncInterval: rollout.Duration(3_600_000_000_001)}, "spec.syncInterval"},
	} {
		err := tc.spec.Validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestLabels(t *testing.T) {
	got := Labels(map[string]string{"region": "west", "topology.kubernetes.io/zone": "a-1", "flag": "", "bad": strings.Repeat("x", 200)},
		map[string]string{"location": "lab 3", "region": "west"})
	want := []string{"flag", "location_lab_3", "region_west", "topology.kubernetes.io_zone_a-1"}
	if !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

func profile(providers ...v1alpha1.AccessProvider) *v1alpha1.ClusterProfile {
	return &v1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "fleet"},
		Status: v1alpha1.ClusterProfileStatus{AccessProviders: providers}}
}

func execCluster(cfg string) clientcmdv1.Cluster {
	return clientcmdv1.Cluster{Server: "https://c1.example:6443", CertificateAuthorityData: []byte("ca"),
		Extensions: []clientcmdv1.NamedExtension{{Name: execExtension, Extension: runtime.RawExtension{Raw: []byte(cfg)}}}}
}

func TestAccessOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *v1alpha1.ClusterProfile
		want Access
		err  string
	}{
		{name: "secretreader, named by the exec config", p: profile(v1alpha1.AccessProvider{Name: "secretreader", Cluster: execCluster(`{"clusterName":"member"}`)}),
			want: Access{Provider: "secretreader", Secret: "member", Key: "token"}},
		{name: "secretreader, named after the profile", p: profile(v1alpha1.AccessProvider{Name: "oidc"}, v1alpha1.AccessProvider{Name: "secretreader"}),
			want: Access{Provider: "secretreader", Secret: "c1", Key: "token"}},
		{name: "kubeconfig-secretreader", p: profile(v1alpha1.AccessProvider{Name: "kubeconfig-secretreader", Cluster: execCluster(`{"name":"kc","key":"value"}`)}),
			want: Access{Provider: "kubeconfig-secretreader", Secret: "kc", Key: "value", Kubeconfig: true}},
		{name: "a Secret elsewhere", p: profile(v1alpha1.AccessProvider{Name: "kubeconfig-secretreader", Cluster: execCluster(`{"name":"kc","key":"v","namespace":"kube-system"}`)}),
			err: `names a Secret in namespace "kube-system"`},
		{name: "nothing usable", p: profile(v1alpha1.AccessProvider{Name: "oidc"}), err: "no access provider temco can use"},
	} {
		got, err := AccessOf(tc.p, "fleet")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got.Provider != tc.want.Provider || got.Secret != tc.want.Secret || got.Key != tc.want.Key || got.Kubeconfig != tc.want.Kubeconfig {
			t.Errorf("%s: %+v (%v), want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestTokenKubeconfig(t *testing.T) {
	b, err := TokenKubeconfig("c1", execCluster(`{}`), "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://c1.example:6443" || cfg.BearerToken != "s3cret" || string(cfg.CAData) != "ca" || cfg.ExecProvider != nil {
		t.Errorf("config %+v", cfg)
	}
}

func TestHealthy(t *testing.T) {
	p := profile()
	if ok, _ := Healthy(p); !ok {
		t.Error("a profile without the condition is unhealthy")
	}
	p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ClusterConditionControlPlaneHealthy, Status: metav1.ConditionFalse, Reason: "Down", Message: "apiserver"}}
	if ok, why := Healthy(p); ok || why != "Down: apiserver" {
		t.Errorf("healthy %v (%q)", ok, why)
	}
}

func TestDecisionsInSlicesOf100(t *testing.T) {
	var names []string
	for i := range 250 {
		names = append(names, "c"+strconv.Itoa(i))
	}
	ds := Decisions("fleet", "hub", "/projects/p/composite-apps/ca/v1/deployment-intent-groups/d", names)
	if len(ds) != 3 || len(ds[0].Decisions) != 100 || len(ds[2].Decisions) != 50 {
		t.Fatalf("%d slices", len(ds))
	}
	key := ds[0].Labels[v1alpha1.DecisionKeyLabel]
	for i, d := range ds {
		if d.Labels[v1alpha1.DecisionKeyLabel] != key || d.Labels[v1alpha1.DecisionIndexLabel] != strconv.Itoa(i) || d.Name != key+"-"+strconv.Itoa(i) {
			t.Errorf("slice %d: %s %v", i, d.Name, d.Labels)
		}
	}
	if r := ds[2].Decisions[49].ClusterProfileRef; r.Name != "c249" || r.Namespace != "fleet" {
		t.Errorf("last decision %+v", r)
	}
	if Decisions("fleet", "hub", "x", nil) != nil {
		t.Error("a DIG on none of the inventory's clusters has decisions")
	}
}

// A secretreader's token goes only to its own cluster: the Secret says whose it is, by the
// server it names or else by its label; a kubeconfig Secret names its server itself.
func TestCheckSecretGivesATokenOnlyToItsCluster(t *testing.T) {
	token := Access{Provider: ProviderSecretReader, Cluster: clientcmdv1.Cluster{Server: "https://c1.example:6443"}, Secret: "member", Key: tokenKey}
	mine := map[string]string{LabelClusterProfile: "c1"}
	for _, tc := range []struct {
		name   string
		access Access
		labels map[string]string
		data   map[string][]byte
		err    string
	}{
		{name: "labelled with the profile", access: token, labels: mine},
		{name: "naming the profile's server", access: token, data: map[string][]byte{ServerKey: []byte(" HTTPS://C1.example:6443/\n")}},
		{name: "naming the profile's server, labelled for another", access: token, labels: map[string]string{LabelClusterProfile: "c2"},
			data: map[string][]byte{ServerKey: []byte("https://c1.example:6443")}},
		{name: "unlabelled", access: token, err: `Secret "member" is not labelled x-k8s.io/cluster-profile: label it x-k8s.io/cluster-profile=c1`},
		{name: "labelled for another profile", access: token, labels: map[string]string{LabelClusterProfile: "c2"},
			err: "is labelled x-k8s.io/cluster-profile=c2"},
		{name: "another label", access: token, labels: map[string]string{"cluster": "c1"}, err: "is not labelled"},
		{name: "naming another server, labelled with the profile", access: token, labels: mine,
			data: map[string][]byte{ServerKey: []byte("https://attacker.example:6443")},
			err:  `is for server "https://attacker.example:6443", not "https://c1.example:6443" the profile names`},
		{name: "naming another port", access: token, data: map[string][]byte{ServerKey: []byte("https://c1.example:7443")}, err: "is for server"},
		{name: "naming no server", access: token, labels: mine, data: map[string][]byte{ServerKey: nil}, err: "is for server"},
		{name: "through the profile's proxy", access: Access{Provider: ProviderSecretReader, Secret: "member", Key: tokenKey,
			Cluster: clientcmdv1.Cluster{Server: "https://c1.example:6443", ProxyURL: "http://attacker.example:3128"}}, labels: mine, err: "not sent through proxy-url"},
		{name: "without checking the server's certificate", access: Access{Provider: ProviderSecretReader, Secret: "member", Key: tokenKey,
			Cluster: clientcmdv1.Cluster{Server: "https://c1.example:6443", InsecureSkipTLSVerify: true}}, labels: mine, err: "insecure-skip-tls-verify"},
		{name: "a kubeconfig Secret", access: Access{Provider: ProviderKubeconfigSecretReader, Secret: "kc", Key: "value", Kubeconfig: true}},
	} {
		err := tc.access.CheckSecret("c1", tc.labels, tc.data)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestSameServer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://c1.example:6443", "https://c1.example:6443", true},
		{"https://C1.Example:6443/", " https://c1.example:6443", true},
		{"https://c1.example", "https://c1.example:443", true},
		{"https://[::1]:443", "https://[::1]", true},
		{"https://10.0.0.1:6443/k8s/clusters/c1", "https://10.0.0.1:6443/k8s/clusters/c1/", true},
		{"https://c1.example:6443", "http://c1.example:6443", false},
		{"https://c1.example:6443", "https://c1.example.attacker:6443", false},
		{"https://10.0.0.1:6443/k8s/clusters/c1", "https://10.0.0.1:6443/k8s/clusters/c2", false},
		{"", "https://c1.example", false},
		{"", " ", false},
	} {
		if got := SameServer(tc.a, tc.b); got != tc.same {
			t.Errorf("SameServer(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
