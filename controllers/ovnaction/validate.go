package ovnaction

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/model"
)

func checkWorkloadIntent(_ context.Context, r *api.Request[WorkloadIntentSpec]) error {
	sp := r.Resource().Spec
	if err := validateWorkloadIntent(sp); err != nil {
		return api.BadRequest("%v", err)
	}
	r.Ref(appID(r.DIG(), sp.App)) // EMCO's reference schema: a workload intent refers to its app
	return nil
}

// checkInterface defaults defaultGateway to "false" before validating, as EMCO does on
// create and replace.
func checkInterface(_ context.Context, r *api.Request[InterfaceSpec]) error {
	sp := &r.Resource().Spec
	if sp.DefaultGateway == "" {
		sp.DefaultGateway = "false"
	}
	if err := validateInterface(*sp); err != nil {
		return api.BadRequest("%v", err)
	}
	return nil
}

// appID is the store id of an app of the DIG's composite app.
func appID(dig, app string) string {
	return dig[:strings.LastIndex(dig, "/deployment-intent-groups/")] + "/apps/" + app
}

// EMCO's schema for names; workloadResource may be up to 254 characters.
var nameRE = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)

const (
	maxWorkloadNameLen = 254
	nameHint           = "use letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
)

func validateWorkloadIntent(sp WorkloadIntentSpec) error {
	if err := model.ValidateName("spec.app", sp.App); err != nil {
		return err
	}
	switch w := sp.WorkloadResource; {
	case w == "":
		return fmt.Errorf("spec.workloadResource is required: the name of the workload (e.g. a Deployment) of the app")
	case len(w) > maxWorkloadNameLen:
		return fmt.Errorf("spec.workloadResource %.20q... is longer than %d characters", w, maxWorkloadNameLen)
	case !nameRE.MatchString(w):
		return fmt.Errorf("spec.workloadResource %q is invalid: %s", w, nameHint)
	}
	if sp.Type == "" {
		return fmt.Errorf("spec.type is required: the workload's kind, e.g. Deployment")
	}
	return model.ValidateName("spec.type", sp.Type)
}

// validateInterface checks what EMCO checks: names are label values (at most 63
// characters), the IP and MAC addresses, when given, parse.
func validateInterface(sp InterfaceSpec) error {
	for _, f := range []struct{ field, value, what string }{
		{"spec.interface", sp.Interface, "the pod's interface name, e.g. eth1"},
		{"spec.name", sp.Network, "the network or provider network the interface attaches to"},
		{"spec.defaultGateway", sp.DefaultGateway, `"true" or "false"`},
	} {
		if f.value == "" {
			return fmt.Errorf("%s is required: %s", f.field, f.what)
		}
		if errs := validation.IsValidLabelValue(f.value); len(errs) > 0 {
			return fmt.Errorf("%s %q is invalid (at most %d characters; %s): %s", f.field, f.value, validation.LabelValueMaxLength,
				nameHint, strings.Join(errs, "; "))
		}
	}
	if sp.IPAddress != "" && net.ParseIP(sp.IPAddress) == nil {
		return fmt.Errorf("spec.ipAddress %q is not an IP address (e.g. 172.16.33.5 or fd00::5)", sp.IPAddress)
	}
	if sp.MACAddress != "" {
		if _, err := net.ParseMAC(sp.MACAddress); err != nil {
			return fmt.Errorf("spec.macAddress %q is not a MAC address (e.g. 0a:58:ac:10:21:05)", sp.MACAddress)
		}
	}
	return nil
}
