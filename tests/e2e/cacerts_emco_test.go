package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// testCertFiles are EMCO's CA certificate example (examples/test-cert) as its users run
// it, written anew: its files with their names and documents, in its Readme's order. The
// issuing cluster issuer1 is registered beside the three edge clusters and is in none of
// the logical clouds.
var testCertFiles = map[string]string{
	"prerequisites.yaml": `version: emco/v2
resourceContext:
  anchor: controllers
metadata :
  name: rsync
spec:
  host:  rsync
  port: 9031
---
version: emco/v2
resourceContext:
  anchor: projects
metadata :
  name: {{.ProjectName}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers
metadata :
  name: {{.ClusterProvider}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/clusters
metadata :
  name: {{.IssuingCluster}}
file:
  {{.IssuingClusterConfig}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/clusters
metadata :
  name: {{.Cluster1}}
file:
  {{.KubeConfig1}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/clusters/{{.Cluster1}}/labels
clusterLabel: {{.GroupLabel1}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/clusters
metadata :
  name: {{.Cluster2}}
file:
  {{.KubeConfig2}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/clusters/{{.Cluster2}}/labels
clusterLabel: {{.GroupLabel23}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/clusters
metadata :
  name: {{.Cluster3}}
file:
  {{.KubeConfig3}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/clusters/{{.Cluster3}}/labels
clusterLabel: {{.GroupLabel23}}
`,
	"ca-cert-cluster-provider.yaml": certIntentDoc("cluster-providers/{{.ClusterProvider}}/ca-certs", "{{.CertIntent0}}", "{{.ClusterIssuer0}}") + `---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/clusters
metadata :
  name: {{.ClusterGroup0a}}
spec:
  scope: name
  cluster: {{.Cluster1}}
  clusterProvider: {{.ClusterProvider}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/clusters
metadata :
  name: {{.ClusterGroup0b}}
spec:
  scope: label
  label: {{.GroupLabel23}}
  clusterProvider: {{.ClusterProvider}}
`,
	"ca-cert-cluster-provider-enrollment.yaml": `version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/enrollment/instantiate
`,
	"ca-cert-cluster-provider-distribution.yaml": `version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/distribution/instantiate
`,
	"logical-clouds.yaml": emcoCloud("{{.FooLogicalCloud}}", "{{.FooCloud}}", "foo", "{{.Cluster1}}", "{{.Cluster2}}") + "---\n" +
		emcoCloud("{{.BarLogicalCloud}}", "{{.BarCloud}}", "bar", "{{.Cluster2}}", "{{.Cluster3}}") + "---\n" +
		emcoCloud("{{.FooBarLogicalCloud}}", "{{.FooBarCloud}}", "foobar", "{{.Cluster1}}", "{{.Cluster3}}"),
	"logical-clouds-instantiate.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.FooLogicalCloud}}/instantiate
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.BarLogicalCloud}}/instantiate
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.FooBarLogicalCloud}}/instantiate
`,
	"ca-cert-logical-cloud.yaml": certIntentDoc("projects/{{.ProjectName}}/ca-certs", "{{.CertIntent1}}", "{{.ClusterIssuer1}}") + "---\n" +
		certIntentDoc("projects/{{.ProjectName}}/ca-certs", "{{.CertIntent2}}", "{{.ClusterIssuer2}}") +
		certCloudDoc("{{.CertIntent1}}", "{{.FooLogicalCloud}}") + certCloudDoc("{{.CertIntent1}}", "{{.BarLogicalCloud}}") +
		certCloudDoc("{{.CertIntent2}}", "{{.FooBarLogicalCloud}}") +
		certCloudGroupDoc("{{.CertIntent1}}", "{{.FooLogicalCloud}}", "{{.ClusterGroup1a}}", "scope: name\n  cluster: {{.Cluster1}}") +
		certCloudGroupDoc("{{.CertIntent1}}", "{{.FooLogicalCloud}}", "{{.ClusterGroup1b}}", "scope: label\n  label: {{.GroupLabel23}}") +
		certCloudGroupDoc("{{.CertIntent1}}", "{{.BarLogicalCloud}}", "{{.ClusterGroup1c}}", "scope: label\n  label: {{.GroupLabel23}}") +
		certCloudGroupDoc("{{.CertIntent2}}", "{{.FooBarLogicalCloud}}", "{{.ClusterGroup2a}}", "scope: label\n  label: {{.GroupLabel23}}") +
		certCloudGroupDoc("{{.CertIntent2}}", "{{.FooBarLogicalCloud}}", "{{.ClusterGroup2b}}", "scope: label\n  label: {{.GroupLabel1}}"),
	"ca-cert-logical-cloud-enrollment.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/ca-certs/{{.CertIntent1}}/enrollment/instantiate
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/ca-certs/{{.CertIntent2}}/enrollment/instantiate
`,
	"ca-cert-logical-cloud-distribution.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/ca-certs/{{.CertIntent1}}/distribution/instantiate
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/ca-certs/{{.CertIntent2}}/distribution/instantiate
`,
}

// certIntentDoc is the example's CA certificate intent: an intermediate CA for a year,
// signed by a cert-manager ClusterIssuer of the issuing cluster.
func certIntentDoc(anchor, name, issuer string) string {
	return `version: emco/v2
resourceContext:
  anchor: ` + anchor + `
metadata:
  name: ` + name + `
spec:
  isCA: true
  issuerRef:
    name: ` + issuer + `
    kind: {{.Kind}}
    group: {{.Group}}
  duration: "8760h"
  issuingCluster: 
    cluster: {{.IssuingCluster}}
    clusterProvider: {{.ClusterProvider}}
  csrInfo: 
    keySize: {{.KeySize}}
    version: 1
    dnsNames: []
    emailAddresses: []
    keyUsages: []
    algorithm: 
      publicKeyAlgorithm: RSA
      signatureAlgorithm: SHA512WithRSA
    subject:
      locale: 
        country: []
        locality: []
        postalCode: []
        province: []
        streetAddress: []
      names:
        commonNamePrefix: {{.CommonNamePrefix}}
      organization:
        names: []
        units: []
`
}

func certCloudDoc(cert, cloud string) string {
	return `---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/ca-certs/` + cert + `/logical-clouds
metadata :
  name: ` + cloud + `
spec:
  logicalCloud: ` + cloud + "\n"
}

func certCloudGroupDoc(cert, cloud, group, selector string) string {
	return `---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/ca-certs/` + cert + `/logical-clouds/` + cloud + `/clusters
metadata :
  name: ` + group + `
spec:
  ` + selector + `
  clusterProvider: {{.ClusterProvider}}
`
}

// emcoCloud is one of the example's three logical clouds: its namespace, its quota, its
// user's permissions and its two clusters.
func emcoCloud(cloud, namespace, prefix, cluster1, cluster2 string) string {
	s := `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds
metadata:
  name: ` + cloud + `
spec:
  namespace: ` + namespace + `
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/` + cloud + `/cluster-quotas
metadata:
    name: ` + prefix + `-quota
spec:
    requests.ephemeral-storage: '500'
    limits.ephemeral-storage: '500'
    persistentvolumeclaims: '500'
    pods: '500'
    configmaps: '1000'
    replicationcontrollers: '500'
    resourcequotas: '500'
    services: '500'
    services.loadbalancers: '500'
    services.nodeports: '500'
    secrets: '500'
    count/replicationcontrollers: '500'
    count/deployments.apps: '500'
    count/replicasets.apps: '500'
    count/statefulsets.apps: '500'
    count/jobs.batch: '500'
    count/cronjobs.batch: '500'
    count/deployments.extensions: '500'
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/` + cloud + `/user-permissions
metadata:
  name: ` + prefix + `-permission
spec:
    namespace: ` + namespace + `
    apiGroups:
    - ""
    - "apps"
    - "k8splugin.io"
    resources:
    - secrets
    - pods
    - configmaps
    - services
    - deployments
    - resourcebundlestates
    verbs:
    - get
    - watch
    - list
    - create
    - delete
`
	for i, cl := range []string{cluster1, cluster2} {
		s += fmt.Sprintf(`---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/%s/cluster-references
metadata:
  name: lc-cl-%s%d
spec:
  clusterProvider: {{.ClusterProvider}}
  cluster: %s
  loadbalancerIp: "0.0.0.0"
`, cloud, prefix, i+1, cl)
	}
	return s
}

// certReadiness is the status of an enrolment or distribution read live (ca-certs'
// default): each object's readiness and, when not ready, its cluster's reason.
type certReadiness struct {
	DeployedStatus string `json:"deployedStatus"`
	ReadyStatus    string `json:"readyStatus"`
	Clusters       []struct {
		Cluster   string `json:"cluster"`
		Resources []struct {
			GVK         struct{ Kind string } `json:"GVK"`
			Name        string                `json:"name"`
			ReadyStatus string                `json:"readyStatus"`
			Reason      string                `json:"reason"`
		} `json:"resources"`
	} `json:"clusters"`
}

// awaitReadiness reads a status live until cond holds, asking again while the api limits live reads (429).
func awaitReadiness(t *testing.T, c *client, path, what string, cond func(certReadiness) bool) certReadiness {
	t.Helper()
	var s certReadiness
	poll.Until(t, what, 3*time.Minute, func(context.Context) error {
		r := c.do("GET", path, nil)
		if r.code != 200 {
			return fmt.Errorf("GET %s: %d %s", path, r.code, r.body)
		}
		s = certReadiness{}
		r.json(t, &s)
		if !cond(s) {
			return fmt.Errorf("last seen: %s", pretty(s))
		}
		return nil
	})
	return s
}

// EMCO's test-cert example, run through temco apply as its Readme runs it, on a provider
// of the test's own: issuer1 (cluster1, where cert-manager runs) and the edge clusters
// cluster1-3. The cluster-provider variant's enrolment is asked before the administrator
// made the ClusterIssuer it names: it waits, and its status shows each CertificateRequest
// NotReady with cert-manager's reason; once the issuers are made (as the example's
// setup-ca-issuers.sh makes them: CA ClusterIssuers new-istio-system, foo and foobar) it
// completes and the distribution follows. The logical-cloud variant's intents, written
// by an admin (authentication is off), name issuer1, a cluster of none of the project's
// clouds, and enrol and distribute. Deleting the files in reverse removes everything.
func TestCACertsRunsEMCOsTestCertExample(t *testing.T) {
	cl1 := stack.Clusters[0]
	prerequisites(t, stack.Clusters...)
	c := &client{t: t}
	project, prov := projectName(t), "test-cert-provider"
	dir := t.TempDir()
	values := fmt.Sprintf(`ProjectName: %s
ClusterProvider: %s
IssuingCluster: issuer1
IssuingClusterConfig: %s
Cluster1: cluster1
KubeConfig1: %s
Cluster2: cluster2
KubeConfig2: %s
Cluster3: cluster3
KubeConfig3: %s
GroupLabel1: group1
GroupLabel23: group23
CertIntent0: cert0
CertIntent1: cert1
CertIntent2: cert2
ClusterIssuer0: new-istio-system
ClusterIssuer1: foo
ClusterIssuer2: foobar
Kind: ClusterIssuer
Group: cert-manager.io
KeySize: 2048
CommonNamePrefix: foo
ClusterGroup0a: group0a
ClusterGroup0b: group0b
ClusterGroup1a: group1a
ClusterGroup1b: group1b
ClusterGroup1c: group1c
ClusterGroup2a: group2a
ClusterGroup2b: group2b
FooLogicalCloud: foo
BarLogicalCloud: bar
FooBarLogicalCloud: foobar
FooCloud: foo-ns
BarCloud: bar-ns
FooBarCloud: foobar-ns
`, project, prov, cl1.Kubeconfig(), cl1.Kubeconfig(), stack.Clusters[1].Kubeconfig(), stack.Clusters[2].Kubeconfig())
	files := map[string]string{"values.yaml": values}
	for name, data := range testCertFiles {
		files[name] = data
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(verb string, names ...string) (string, error) {
		args := []string{verb}
		for _, n := range names {
			args = append(args, "-f", n)
		}
		return temco(t, dir, append(args, "-v", "values.yaml")...)
	}
	apply := func(names ...string) {
		t.Helper()
		if out, err := run("apply", names...); err != nil {
			t.Fatalf("temco apply %v: %v\n%s", names, err, out)
		}
	}
	cpFiles := []string{"ca-cert-cluster-provider.yaml", "ca-cert-cluster-provider-enrollment.yaml", "ca-cert-cluster-provider-distribution.yaml"}
	lcFiles := []string{"ca-cert-logical-cloud.yaml", "ca-cert-logical-cloud-enrollment.yaml", "ca-cert-logical-cloud-distribution.yaml"}
	cloudFiles := []string{"logical-clouds.yaml", "logical-clouds-instantiate.yaml"}
	deleted := false
	t.Cleanup(func() {
		if deleted {
			return
		}
		for _, group := range [][]string{lcFiles, cloudFiles, cpFiles, {"prerequisites.yaml"}} {
			if out, err := run("delete", group...); err != nil {
				t.Logf("clean-up: temco delete %v: %v\n%s", group, err, out)
			}
		}
	})

	apply("prerequisites.yaml")

	// The cluster-provider variant, its enrolment asked before the issuer exists.
	apply("ca-cert-cluster-provider.yaml")
	// temco apply awaits the enrolment: run apart, it outlives no test (t is not its to use).
	type result struct {
		out string
		err error
	}
	enrolled := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		cmd := exec.CommandContext(ctx, self, "apply", "-f", "ca-cert-cluster-provider-enrollment.yaml", "-v", "values.yaml",
			"--api", strings.TrimSuffix(apiURL, "/v2"))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		enrolled <- result{string(out), err}
	}()
	cert0 := "/cluster-providers/" + prov + "/ca-certs/cert0"
	waiting := awaitReadiness(t, c, cert0+"/enrollment/status", "cert0's enrolment waiting on cert-manager's reasons", func(s certReadiness) bool {
		n := 0
		for _, cl := range s.Clusters {
			for _, r := range cl.Resources {
				if r.ReadyStatus == "NotReady" && strings.Contains(r.Reason, `Referenced "ClusterIssuer" not found`) {
					n++
				}
			}
		}
		return n == 3
	})
	if waiting.DeployedStatus != lifecycle.StatusInstantiating || waiting.ReadyStatus != "NotReady" || len(waiting.Clusters) != 1 ||
		waiting.Clusters[0].Cluster != "issuer1" {
		t.Errorf("the waiting enrolment's status: %s", pretty(waiting))
	}
	t.Logf("the enrolment waits: %s", waiting.Clusters[0].Resources[0].Reason)
	select {
	case r := <-enrolled:
		t.Fatalf("temco apply of the enrolment returned while its issuer is missing: %v\n%s", r.err, r.out)
	default:
	}

	// The administrator's issuers, then the enrolment completes.
	for _, name := range []string{"new-istio-system", "foo", "foobar"} {
		makeCMIssuersNamed(t, cl1, "e2e-test-cert-"+name, name)
	}
	select {
	case r := <-enrolled:
		t.Logf("temco apply -f ca-cert-cluster-provider-enrollment.yaml:\n%s", r.out)
		if r.err != nil {
			t.Fatalf("temco apply of the enrolment: %v", r.err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("temco apply of the enrolment did not return within 5 minutes of the issuer's creation")
	}
	done := awaitReadiness(t, c, cert0+"/enrollment/status", "cert0's enrolment Ready", func(s certReadiness) bool {
		return s.ReadyStatus == "Ready"
	})
	for _, r := range done.Clusters[0].Resources {
		if r.GVK.Kind != "CertificateRequest" || r.ReadyStatus != "Ready" || r.Reason != "" {
			t.Errorf("the enrolment's %s %s: %s %q", r.GVK.Kind, r.Name, r.ReadyStatus, r.Reason)
		}
	}
	apply("ca-cert-cluster-provider-distribution.yaml")
	awaitDistributed(t, c, cert0, 3)

	// The logical-cloud variant: the admin's intents name issuer1, in none of the clouds.
	apply(cloudFiles...)
	apply(lcFiles...)
	for cert, members := range map[string]int{"cert1": 3, "cert2": 2} {
		awaitDistributed(t, c, "/projects/"+project+"/ca-certs/"+cert, members)
	}

	// As the Readme deletes: each variant's files (delete takes them in reverse), the
	// clouds, then the prerequisites.
	for _, group := range [][]string{lcFiles, cloudFiles, cpFiles, {"prerequisites.yaml"}} {
		if out, err := run("delete", group...); err != nil {
			t.Fatalf("temco delete %v: %v\n%s", group, err, out)
		}
	}
	deleted = true
	for _, p := range []string{"/projects/" + project, "/cluster-providers/" + prov} {
		c.do("GET", p, nil).must(t, 404)
	}
}

// awaitDistributed waits until a certificate intent's distribution is Instantiated with
// its objects on each of its members, all ready.
func awaitDistributed(t *testing.T, c *client, cert string, members int) {
	t.Helper()
	s := awaitReadiness(t, c, cert+"/distribution/status", cert+"'s distribution Instantiated and Ready", func(s certReadiness) bool {
		return s.DeployedStatus == lifecycle.StatusInstantiated && s.ReadyStatus == "Ready"
	})
	if len(s.Clusters) != members {
		t.Errorf("%s is distributed to %d clusters, want %d: %s", cert, len(s.Clusters), members, pretty(s))
	}
}
