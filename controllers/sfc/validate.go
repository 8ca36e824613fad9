package sfc

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/model"
)

// The checks answer 400 with the reason. EMCO validates the same fields with its JSON
// schemas; like EMCO (whose schema defaults are never applied) temco needs chainType and
// namespace sent.

func checkChain(_ context.Context, q *api.Request[ChainSpec]) error {
	return badRequest(validateChain(q.Resource().Spec))
}

func checkLink(_ context.Context, q *api.Request[LinkSpec]) error {
	sp := q.Resource().Spec
	if err := validateLink(sp); err != nil {
		return api.BadRequest("%v", err)
	}
	q.Ref(AppID(q.DIG(), sp.App))
	return nil
}

func checkClientSelector(_ context.Context, q *api.Request[ClientSelectorSpec]) error {
	sp := q.Resource().Spec
	if err := validateClientSelector(sp); err != nil {
		return api.BadRequest("%v", err)
	}
	q.Field(FieldChainEnd, sp.ChainEnd)
	return nil
}

func checkProviderNetwork(_ context.Context, q *api.Request[ProviderNetworkSpec]) error {
	return badRequest(validateProviderNetwork(q.Resource().Spec))
}

func badRequest(err error) error {
	if err != nil {
		return api.BadRequest("%v", err)
	}
	return nil
}

// AppID is the store id of an app of the composite app holding the DIG whose id is dig.
func AppID(dig, app string) string {
	return dig[:strings.LastIndex(dig, "/deployment-intent-groups/")] + "/apps/" + app
}

func validateChain(sp ChainSpec) error {
	if sp.ChainType != ChainTypeRouting {
		return fmt.Errorf("spec.chainType must be %q, the only chain type, not %q", ChainTypeRouting, sp.ChainType)
	}
	if errs := validation.IsDNS1123Label(sp.Namespace); len(errs) > 0 {
		return fmt.Errorf("spec.namespace %q is not a namespace name: %s", sp.Namespace, strings.Join(errs, "; "))
	}
	return nil
}

func validateLink(sp LinkSpec) error {
	for _, f := range []struct{ field, value string }{
		{"spec.leftNet", sp.LeftNet}, {"spec.rightNet", sp.RightNet}, {"spec.app", sp.App}, {"spec.workloadResource", sp.WorkloadResource},
	} {
		if err := model.ValidateName(f.field, f.value); err != nil {
			return err
		}
	}
	if sp.LeftNet == sp.RightNet {
		return fmt.Errorf("spec.leftNet and spec.rightNet are both %q: a link joins two networks", sp.LeftNet)
	}
	if _, err := ParseLinkLabel(sp.LinkLabel); err != nil {
		return err
	}
	return CheckWorkloadKind("spec.resourceType", sp.ResourceType)
}

// ParseLinkLabel reads a link label "key=value" as the label it puts on the pods.
func ParseLinkLabel(s string) (map[string]string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || v == "" {
		return nil, fmt.Errorf("spec.linkLabel %q is not a label key=value", s)
	}
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return nil, fmt.Errorf("spec.linkLabel %q: key %q is invalid: %s", s, k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return nil, fmt.Errorf("spec.linkLabel %q: value %q is invalid: %s", s, v, strings.Join(errs, "; "))
	}
	return map[string]string{k: v}, nil
}

func validateChainEnd(end string) error {
	if end != EndLeft && end != EndRight {
		return fmt.Errorf("spec.chainEnd must be %q or %q, not %q", EndLeft, EndRight, end)
	}
	return nil
}

func validateClientSelector(sp ClientSelectorSpec) error {
	if err := validateChainEnd(sp.ChainEnd); err != nil {
		return err
	}
	for _, s := range []struct {
		field string
		sel   metav1.LabelSelector
	}{{"spec.podSelector", sp.PodSelector}, {"spec.namespaceSelector", sp.NamespaceSelector}} {
		// EMCO's schema requires matchLabels, which sfcclient matches and copies.
		if len(s.sel.MatchLabels) == 0 {
			return fmt.Errorf("%s.matchLabels is required: at least one label", s.field)
		}
		if _, err := metav1.LabelSelectorAsSelector(&s.sel); err != nil {
			return fmt.Errorf("%s is not a label selector: %v", s.field, err)
		}
	}
	return nil
}

func validateProviderNetwork(sp ProviderNetworkSpec) error {
	if err := validateChainEnd(sp.ChainEnd); err != nil {
		return err
	}
	if err := model.ValidateName("spec.providerNetwork", sp.ProviderNetwork); err != nil {
		return err
	}
	if a, err := netip.ParseAddr(sp.GatewayIP); err != nil || !a.Is4() {
		return fmt.Errorf("spec.gatewayIp %q is not an IPv4 address", sp.GatewayIP)
	}
	if sp.Subnet == "" {
		return nil
	}
	if _, err := netip.ParsePrefix(sp.Subnet); err == nil && !strings.Contains(sp.Subnet, ":") {
		return nil
	}
	if a, err := netip.ParseAddr(sp.Subnet); err == nil && a.Is4() {
		return nil
	}
	return fmt.Errorf("spec.subnet %q is not an IPv4 address or prefix such as 172.30.10.0/24", sp.Subnet)
}
