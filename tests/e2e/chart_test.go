package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// installer server-side applies objects to one cluster, as `helm install` would create them,
// with strict field validation: an unknown or misplaced field is an error, not dropped.
type installer struct {
	t      *testing.T
	dyn    *dynamic.DynamicClient
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newInstaller(t *testing.T, kubeconfig string) *installer {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &installer{t: t, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (in *installer) apply(o *unstructured.Unstructured, namespace string) {
	in.t.Helper()
	gvk := o.GroupVersionKind()
	m, err := in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		in.mapper.Reset() // a CRD installed since the last discovery
		if m, err = in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			in.t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
		}
	}
	data, err := o.MarshalJSON()
	if err != nil {
		in.t.Fatal(err)
	}
	var ri dynamic.ResourceInterface = in.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ri = in.dyn.Resource(m.Resource).Namespace(namespace)
	}
	force := true
	if _, err := ri.Patch(context.Background(), o.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: "helm", Force: &force, FieldValidation: "Strict"}); err != nil {
		in.t.Errorf("the API server refused %s %s: %v", gvk.Kind, o.GetName(), err)
	}
}

// The chart, rendered with the minimal and with every option on (TLS, existing Secrets,
// ServiceMonitor against the Prometheus operator's real CRD, the hub with its RBAC),
// installs into a cluster: the API server accepts every object (the chart's CRDs first,
// as Helm installs them) and every Deployment becomes Available.
func TestHelmChartInstalls(t *testing.T) {
	cl := stack.Clusters[0]
	in := newInstaller(t, cl.Kubeconfig())
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	crdFile := filepath.Join(binDir, "crds", "monitoring.coreos.com_servicemonitors.yaml")
	data, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatalf("%v (built by `make tools`)", err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	in.apply(crd, "")
	t.Cleanup(func() {
		_ = in.dyn.Resource(apiextensionsCRDs).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{})
	})
	awaitEstablished(t, in, crd.GetName())

	ns := "temco-chart-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	dir, err := testenv.ChartDir()
	if err != nil {
		t.Fatal(err)
	}
	// A release named after the chart is not repeated in its objects' names.
	for release, file := range map[string]string{"temco": "minimal-values.yaml", "edge-temco": "full-values.yaml"} {
		vals, err := testenv.ValuesFile(file)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := testenv.RenderChart(dir, release, ns, vals)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, o := range objs {
			if o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding" {
				gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: strings.ToLower(o.GetKind()) + "s"}
				name := o.GetName()
				t.Cleanup(func() { _ = in.dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
			}
			// The stack's clusters hold temco's CRDs already, and its hub uses them: they are
			// applied (the same definitions) but never deleted.
			in.apply(o, ns)
			if o.GetKind() == "CustomResourceDefinition" {
				awaitEstablished(t, in, o.GetName())
			}
			kinds[o.GetKind()]++
		}
		full := file == "full-values.yaml"
		if kinds["CustomResourceDefinition"] != 6 || kinds["Deployment"] != map[bool]int{false: 2, true: 3}[full] ||
			full != (kinds["ServiceMonitor"] == 1) || full != (kinds["ClusterRole"] == 1) {
			t.Errorf("%s rendered %v", file, kinds)
		}
		deps := []string{release + "-api", release + "-worker"}
		if full {
			deps = append(deps, release+"-hub")
		}
		for _, d := range deps {
			awaitAvailable(t, cs.AppsV1().Deployments(ns), d)
		}
	}
}

var apiextensionsCRDs = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func awaitEstablished(t *testing.T, in *installer, name string) {
	t.Helper()
	poll.Until(t, "CRD "+name+" Established", time.Minute, func(context.Context) error {
		crd, err := in.dyn.Resource(apiextensionsCRDs).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Established" && c["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
}

type deploymentGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.Deployment, error)
}

func awaitAvailable(t *testing.T, deps deploymentGetter, name string) {
	t.Helper()
	poll.Until(t, "Deployment "+name+" Available", 2*time.Minute, func(context.Context) error {
		d, err := deps.Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return err
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Replicas != nil && d.Status.AvailableReplicas == *d.Spec.Replicas {
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		return fmt.Errorf("%+v", d.Status)
	})
}
