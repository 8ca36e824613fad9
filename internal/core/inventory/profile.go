package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
)

// The access providers temco understands: those of the cluster inventory API's two
// reference plugins, both of which read a Secret on the hub. temco reads the Secret
// itself; it never runs a plugin a profile names.
const (
	// ProviderSecretReader: a bearer token under key "token" of the Secret named after
	// the cluster (clusterName of the provider's exec config, else the profile's name).
	ProviderSecretReader = "secretreader"
	// ProviderKubeconfigSecretReader: a kubeconfig under key "key" of Secret "name" (exec
	// config {name, key, namespace}).
	ProviderKubeconfigSecretReader = "kubeconfig-secretreader"

	execExtension = "client.authentication.k8s.io/exec"
	tokenKey      = "token"

	// LabelClusterProfile on a Secret names the ClusterProfile (of the Secret's namespace)
	// whose credentials it holds: the label the cluster inventory API's push model (KEP-4322)
	// puts on the credential Secrets a cluster manager writes for its consumers.
	LabelClusterProfile = "x-k8s.io/cluster-profile"
	// ServerKey, in a secretreader's Secret, names the server its token is for.
	ServerKey = "server"
)

// Access is how temco reaches a profile's cluster: the provider's server and CA, and the
// Secret on the hub that holds its token, or (Kubeconfig) a whole kubeconfig.
type Access struct {
	Provider   string
	Cluster    clientcmdv1.Cluster
	Secret     string // in the inventory's namespace
	Key        string
	Kubeconfig bool
}

// execConfig is the exec config of both reference plugins, as a provider's cluster
// extension carries it.
type execConfig struct {
	ClusterName string `json:"clusterName"`
	Name        string `json:"name"`
	Key         string `json:"key"`
	Namespace   string `json:"namespace"`
}

// AccessOf picks the first access provider of the profile temco understands (those of
// status.accessProviders first, then the deprecated credentialProviders). A Secret in
// another namespace than the inventory's is refused: the inventory reads its own.
func AccessOf(p *v1alpha1.ClusterProfile, namespace string) (Access, error) {
	providers := append(append([]v1alpha1.AccessProvider{}, p.Status.AccessProviders...), p.Status.CredentialProviders...)
	var names []string
	for _, ap := range providers {
		var cfg execConfig
		for _, ext := range ap.Cluster.Extensions {
			if ext.Name == execExtension && len(ext.Extension.Raw) > 0 {
				if err := json.Unmarshal(ext.Extension.Raw, &cfg); err != nil {
					return Access{}, fmt.Errorf("access provider %q: its exec config is not JSON: %v", ap.Name, err)
				}
			}
		}
		switch ap.Name {
		case ProviderSecretReader:
			return Access{Provider: ap.Name, Cluster: ap.Cluster, Secret: firstOf(cfg.ClusterName, p.Name), Key: tokenKey}, nil
		case ProviderKubeconfigSecretReader:
			if cfg.Name == "" || cfg.Key == "" {
				return Access{}, fmt.Errorf("access provider %q: its exec config names no Secret (name and key)", ap.Name)
			}
			if cfg.Namespace != "" && cfg.Namespace != namespace {
				return Access{}, fmt.Errorf("access provider %q names a Secret in namespace %q: temco reads Secrets of the inventory's namespace %q only", ap.Name, cfg.Namespace, namespace)
			}
			return Access{Provider: ap.Name, Cluster: ap.Cluster, Secret: cfg.Name, Key: cfg.Key, Kubeconfig: true}, nil
		}
		names = append(names, ap.Name)
	}
	return Access{}, fmt.Errorf("no access provider temco can use (it reads %s and %s; the profile has %v)",
		ProviderSecretReader, ProviderKubeconfigSecretReader, names)
}

// CheckSecret tells whether the Secret a profile's access reads (its labels and data)
// holds that profile's credentials. A secretreader profile names both the Secret (any of
// the namespace) and the server its token is sent to: without this check a profile could
// send another cluster's token to a server of its writer's. So the Secret must say whose
// it is: a server under key "server", which must be the profile's (whatever the labels), or
// else label x-k8s.io/cluster-profile naming the profile. A kubeconfig Secret is sent to
// the server its own kubeconfig names: nothing to check.
func (a Access) CheckSecret(profile string, labels map[string]string, data map[string][]byte) error {
	if a.Kubeconfig {
		return nil
	}
	// The token must reach the server itself: a proxy the profile names, or a server
	// certificate left unchecked, would hand it to whoever writes the profile.
	if a.Cluster.ProxyURL != "" || a.Cluster.InsecureSkipTLSVerify {
		return fmt.Errorf("access provider %q: a token is not sent through proxy-url or with insecure-skip-tls-verify (the profile's writer could read it): give the server's certificate authority instead", a.Provider)
	}
	if server, ok := data[ServerKey]; ok {
		if !SameServer(string(server), a.Cluster.Server) {
			return fmt.Errorf("access provider %q: Secret %q is for server %.200q, not %.200q the profile names: its token goes to its own server only",
				a.Provider, a.Secret, strings.TrimSpace(string(server)), a.Cluster.Server)
		}
		return nil
	}
	if owner, ok := labels[LabelClusterProfile]; !ok || owner != profile {
		why := "is not labelled " + LabelClusterProfile
		if ok {
			why = fmt.Sprintf("is labelled %s=%s", LabelClusterProfile, owner)
		}
		return fmt.Errorf("access provider %q: Secret %q %s: label it %s=%s, or name the cluster's server under key %q, to give its token to this profile",
			a.Provider, a.Secret, why, LabelClusterProfile, profile, ServerKey)
	}
	return nil
}

// SameServer tells whether two kubeconfig server URLs name the same endpoint: scheme and
// host compared without case, a default port as none, a trailing "/" ignored; an empty
// one names none.
func SameServer(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return strings.TrimSuffix(s, "/")
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		scheme := strings.ToLower(u.Scheme)
		if scheme == "https" && port == "443" || scheme == "http" && port == "80" {
			port = ""
		}
		if port != "" {
			host = net.JoinHostPort(host, port)
		} else if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return scheme + "://" + host + strings.TrimSuffix(u.EscapedPath(), "/")
	}
	na := norm(a)
	return na != "" && na == norm(b)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TokenKubeconfig is a kubeconfig reaching cluster with a bearer token.
func TokenKubeconfig(name string, c clientcmdv1.Cluster, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CertificateAuthorityData,
		TLSServerName: c.TLSServerName, InsecureSkipTLSVerify: c.InsecureSkipTLSVerify, ProxyURL: c.ProxyURL}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}

// Healthy tells whether a profile's control plane is healthy: not when its
// ControlPlaneHealthy condition is False (a profile without it is taken as healthy).
func Healthy(p *v1alpha1.ClusterProfile) (bool, string) {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ClusterConditionControlPlaneHealthy)
	if c != nil && c.Status == metav1.ConditionFalse {
		return false, fmt.Sprintf("%s: %s", c.Reason, c.Message)
	}
	return true, ""
}

// ProfileLabels are the temco labels of a healthy profile's cluster.
func ProfileLabels(p *v1alpha1.ClusterProfile) []string {
	props := make(map[string]string, len(p.Status.Properties))
	for _, pr := range p.Status.Properties {
		props[pr.Name] = pr.Value
	}
	return Labels(p.Labels, props)
}

// Label keys of the PlacementDecisions temco writes, beside the API's own.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelInventory = "temco.io/inventory"
	// AnnotationDIG names the DIG a decision is for (its store id).
	AnnotationDIG = "temco.io/deployment-intent-group"
	// MaxDecisions is the API's limit of clusters per PlacementDecision.
	MaxDecisions = 100
	// SchedulerName names temco in its decisions.
	SchedulerName = "temco"
)

// DecisionKey is the decision key of a DIG's slices: a label value derived from its id.
func DecisionKey(digID string) string {
	h := sha256.Sum256([]byte(digID))
	return "temco-" + hex.EncodeToString(h[:10])
}

// InventoryLabel is the label value naming an inventory (hashed when too long for one).
func InventoryLabel(name string) string {
	if len(name) <= 63 {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return "inventory-" + hex.EncodeToString(h[:10])
}

// Decisions lays out the profiles (names, in order) a DIG is placed on as
// PlacementDecision slices of at most MaxDecisions, named "<key>-<index>".
func Decisions(namespace, inventory, digID string, profiles []string) []*v1alpha1.PlacementDecision {
	key := DecisionKey(digID)
	var out []*v1alpha1.PlacementDecision
	for i := 0; i*MaxDecisions < len(profiles); i++ {
		part := profiles[i*MaxDecisions : min(len(profiles), (i+1)*MaxDecisions)]
		d := &v1alpha1.PlacementDecision{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PlacementDecision"},
			ObjectMeta: metav1.ObjectMeta{Name: key + "-" + strconv.Itoa(i), Namespace: namespace,
				Labels: map[string]string{v1alpha1.DecisionKeyLabel: key, v1alpha1.DecisionIndexLabel: strconv.Itoa(i),
					v1alpha1.PlacementKeyLabel: key, LabelManagedBy: SchedulerName, LabelInventory: InventoryLabel(inventory)},
				Annotations: map[string]string{AnnotationDIG: digID}},
			SchedulerName: SchedulerName,
		}
		for _, p := range part {
			d.Decisions = append(d.Decisions, v1alpha1.ClusterDecision{
				ClusterProfileRef: v1alpha1.ClusterProfileReference{Name: p, Namespace: namespace},
				Reason:            "placed by " + digID})
		}
		out = append(out, d)
	}
	return out
}
