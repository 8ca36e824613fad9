package api

// The manifest an agent cluster's operator applies to run temco agent there
// (docs/agent.md): rendered by temco, so that it names this temco and this cluster.

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/labstack/echo/v4"
)

// DefaultAgentImage is the image the manifest runs temco agent from unless ?image= says.
const DefaultAgentImage = "ghcr.io/temco/temco:0.1.0"

// The manifest's Secrets: the join token the operator creates from the token temco
// issued, and the credential the agent keeps once it joined.
const (
	agentJoinSecret       = "temco-agent-join"
	agentCredentialSecret = "temco-agent-credential"
)

// imageRef is what ?image= may be: a registry path with a tag or a digest, nothing a YAML
// or a shell would read otherwise.
var imageRef = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:@-]{0,254}$`)

// agentManifest renders the objects that run temco agent in the cluster: its namespace and
// service account, the rights it applies with (cluster-admin unless ?clusterRole= names
// another: a DIG may place any kind), a Role on its own Secrets, and a Deployment of one
// agent (Recreate: two would apply at once). It holds no secret: the join token goes in
// Secret temco-agent-join, which the operator creates.
func (s *Server) agentManifest(c echo.Context) error {
	key, _, err := s.agentClusterOf(c)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	ns, image, role := cmp.Or(q.Get("namespace"), "temco-agent"), cmp.Or(q.Get("image"), DefaultAgentImage), cmp.Or(q.Get("clusterRole"), "cluster-admin")
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return badRequest("namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	if !imageRef.MatchString(image) {
		return badRequest("image %q is not an image reference", image)
	}
	if errs := validation.IsDNS1123Subdomain(role); len(errs) > 0 && !strings.HasPrefix(role, "system:") {
		return badRequest("clusterRole %q: %s", role, strings.Join(errs, "; "))
	}
	apiURL, err := agentAPIURL(c, q.Get("api"))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# temco agent for cluster %s, calling %s.\n# Before applying, create the join token's Secret (the token POST .../agent-token answered):\n"+
		"#   kubectl create namespace %s\n#   kubectl -n %s create secret generic %s --from-literal=token=<join token>\n", key, apiURL, ns, ns, agentJoinSecret)
	for _, o := range agentObjects(ns, image, role, apiURL) {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return c.Blob(http.StatusOK, "application/yaml", out.Bytes())
}

// agentAPIURL is where the agent calls temco: ?api=, else this request's own address.
func agentAPIURL(c echo.Context, given string) (string, error) {
	if given == "" {
		return c.Scheme() + "://" + c.Request().Host, nil
	}
	u, err := url.Parse(given)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", badRequest("api %q: an http(s) URL of temco's api, such as https://temco.example.com", given)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func agentObjects(ns, image, role, apiURL string) []any {
	labels := map[string]string{"app.kubernetes.io/name": "temco-agent"}
	meta := func(kind, apiVersion, name string, namespaced bool) (metav1.TypeMeta, metav1.ObjectMeta) {
		om := metav1.ObjectMeta{Name: name, Labels: labels}
		if namespaced {
			om.Namespace = ns
		}
		return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}, om
	}
	nsT, nsM := meta("Namespace", "v1", ns, false)
	saT, saM := meta("ServiceAccount", "v1", "temco-agent", true)
	crbT, crbM := meta("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "temco-agent-"+ns, false)
	roleT, roleM := meta("Role", "rbac.authorization.k8s.io/v1", "temco-agent", true)
	rbT, rbM := meta("RoleBinding", "rbac.authorization.k8s.io/v1", "temco-agent", true)
	depT, depM := meta("Deployment", "apps/v1", "temco-agent", true)
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "temco-agent", Namespace: ns}}
	one, no, yes, uid := int32(1), false, true, int64(65532)
	return []any{
		&corev1.Namespace{TypeMeta: nsT, ObjectMeta: nsM},
		&corev1.ServiceAccount{TypeMeta: saT, ObjectMeta: saM},
		&rbacv1.ClusterRoleBinding{TypeMeta: crbT, ObjectMeta: crbM, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}},
		// Its credential's Secret: read and replaced (create cannot be bound to a name).
		&rbacv1.Role{TypeMeta: roleT, ObjectMeta: roleM, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{agentCredentialSecret}, Verbs: []string{"get", "update"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{TypeMeta: rbT, ObjectMeta: rbM, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "temco-agent"}},
		&appsv1.Deployment{TypeMeta: depT, ObjectMeta: depM, Spec: appsv1.DeploymentSpec{
			Replicas: &one, Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName: "temco-agent",
				SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid},
				Containers: []corev1.Container{{Name: "agent", Image: image,
					Args: []string{"agent", "--api", apiURL, "--credential-secret", ns + "/" + agentCredentialSecret},
					Env: []corev1.EnvVar{{Name: "TEMCO_AGENT_JOIN_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: agentJoinSecret}, Key: "token", Optional: &yes}}}},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}}}},
	}
}
