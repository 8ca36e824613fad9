package e2e

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/dev/devstack"
)

// Objects shaped as EMCO's ncm and sfc write them for Nodus and Multus.
var customObjects = []struct {
	gvr    schema.GroupVersionResource
	kind   string
	spec   map[string]any
	status bool // the kind has a status subresource
}{
	{gvr: nodus("networks"), kind: "Network", status: true, spec: map[string]any{
		"cniType": "ovn4nfv",
		"ipv4Subnets": []any{map[string]any{"name": "subnet1", "subnet": "172.16.33.0/24",
			"gateway": "172.16.33.1/24", "excludeIps": "172.16.33.2 172.16.33.5..172.16.33.10"}},
	}},
	{gvr: nodus("providernetworks"), kind: "ProviderNetwork", status: true, spec: map[string]any{
		"cniType":         "ovn4nfv",
		"providerNetType": "VLAN",
		"ipv4Subnets":     []any{map[string]any{"name": "subnet2", "subnet": "172.16.34.0/24", "gateway": "172.16.34.1/24"}},
		"vlan": map[string]any{"vlanId": "100", "providerInterfaceName": "eth1", "logicalInterfaceName": "eth1.100",
			"vlanNodeSelector": "specific", "nodeLabelList": []any{"kubernetes.io/hostname=" + devstack.NodeName}},
	}},
	{gvr: nodus("networkchainings"), kind: "NetworkChaining", status: true, spec: map[string]any{
		"chainType": "Routing",
		"routingSpec": map[string]any{
			"namespace":    "default",
			"networkChain": "app=slb,dync-net1,app=ngfw,dync-net2,app=sdewan",
			"leftNetwork":  []any{map[string]any{"networkName": "left-pnetwork", "gatewayIp": "172.30.10.2", "subnet": "172.30.10.0/24"}},
			"rightNetwork": []any{map[string]any{"networkName": "right-pnetwork", "gatewayIp": "172.30.20.2", "subnet": "172.30.20.0/24"}},
		},
	}},
	{gvr: schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"},
		kind: "NetworkAttachmentDefinition", spec: map[string]any{
			"config": `{"cniVersion": "0.3.1", "name": "ovn4nfv-k8s-plugin", "type": "ovn4nfvk8s-cni"}`,
		}},
}

func nodus(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "k8s.plugin.opnfv.org", Version: "v1alpha1", Resource: resource}
}

// A local cluster of the stack stores an object of each custom kind the dev stack
// defines: created, read back with its spec (and status) as written, deleted.
func TestDevStackCRDsHoldCustomObjects(t *testing.T) {
	dc, err := stack.Clusters[0].Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, o := range customObjects {
		t.Run(o.kind, func(t *testing.T) {
			objects := dc.Resource(o.gvr).Namespace("default")
			name := "crds-test-" + o.gvr.Resource
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": o.gvr.GroupVersion().String(), "kind": o.kind,
				"metadata": map[string]any{"name": name}, "spec": o.spec,
			}}
			if _, err := objects.Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
				t.Fatalf("create %s: %v", o.kind, err)
			}
			t.Cleanup(func() { _ = objects.Delete(context.Background(), name, metav1.DeleteOptions{}) })
			got, err := objects.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("read %s back: %v", o.kind, err)
			}
			if !reflect.DeepEqual(got.Object["spec"], o.spec) {
				t.Errorf("%s spec read back as %v, want %v", o.kind, got.Object["spec"], o.spec)
			}
			if o.status {
				status := map[string]any{"state": "Created"}
				got.Object["status"] = status
				if _, err := objects.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("update the status of %s: %v", o.kind, err)
				}
				if got, err = objects.Get(ctx, name, metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Object["status"], status) {
					t.Errorf("%s status read back as %v, want %v", o.kind, got.Object["status"], status)
				}
			}
			if err := objects.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete %s: %v", o.kind, err)
			}
			eventually(t, o.kind+" deleted", 30*time.Second, func() error {
				_, err := objects.Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("still there (%v)", err)
			})
		})
	}
}

// Every cluster of the stack has established the dev stack's definitions (hand-written,
// and copied from the modules that ship them), and installing them again (as every start
// does) leaves them untouched.
func TestDevStackCRDsInstallAgainChangesNothing(t *testing.T) {
	files, err := devstack.ClusterCRDFiles(binDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, cl := range stack.Clusters {
		dc, err := cl.Dynamic()
		if err != nil {
			t.Fatal(err)
		}
		crds := dc.Resource(apiextensionsCRDs)
		versions := func() map[string]string {
			out := map[string]string{}
			for _, f := range files {
				for _, want := range f.CRDs {
					got, err := crds.Get(ctx, want.GetName(), metav1.GetOptions{})
					if err != nil {
						t.Fatalf("%s: %v", cl.Name, err)
					}
					out[got.GetName()] = got.GetResourceVersion()
				}
			}
			return out
		}
		before := versions()
		if err := cl.InstallCRDs(ctx); err != nil {
			t.Fatalf("%s: install again: %v", cl.Name, err)
		}
		if after := versions(); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: installing again changed the definitions: resource versions %v, then %v", cl.Name, before, after)
		}
	}
}
