package dtc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/model"
)

// The checks answer 400 with the reason: EMCO's JSON schemas, plus what no sub-controller
// could turn into cluster objects (a label that is not key=value, a CIDR that does not
// parse, a mesh setting none knows).

// KeyMask stands for the sealed private key in answers.
const KeyMask = "********"

func checkInbound(_ context.Context, q *api.Request[InboundSpec]) error {
	sp := &q.Resource().Spec
	if err := validateInbound(sp); err != nil {
		return api.BadRequest("%v", err)
	}
	return sealKey(q, &sp.External.ExternalCerts.ServicePrivateKey)
}

// sealKey keeps the private key sealed beside the intent and a mask in its body; a PUT
// that sends the mask keeps the stored key.
func sealKey(q *api.Request[InboundSpec], key *string) error {
	switch *key {
	case "":
		return q.SetSealed(nil)
	case KeyMask:
		old, err := q.OldSealed()
		if err != nil {
			return err
		}
		if len(old) == 0 {
			return api.BadRequest("spec.external.externalCerts.servicePrivateKey is %q, the mask of a stored key, and no key is stored: send the key", KeyMask)
		}
		return q.SetSealed(old)
	}
	plain := []byte(*key)
	*key = KeyMask
	return q.SetSealed(plain)
}

func validateInbound(sp *InboundSpec) error {
	if err := names("spec.app", sp.App, "spec.serviceName", sp.ServiceName); err != nil {
		return err
	}
	if _, _, err := ParseLabel("spec.appLabel", sp.AppLabel); err != nil {
		return err
	}
	switch {
	case len(sp.ExternalName) > 128:
		return errors.New("spec.externalName is longer than 128 characters")
	case sp.Port < 1 || sp.Port > 65535:
		return fmt.Errorf("spec.port %d is out of range 1..65535", sp.Port)
	case sp.Protocol == "" || len(sp.Protocol) > 5 || !protocolRE.MatchString(sp.Protocol):
		return fmt.Errorf("spec.protocol %q: a protocol name such as TCP or UDP, at most 5 characters", sp.Protocol)
	case len(sp.ServiceMesh) > 128:
		return errors.New("spec.serviceMesh is longer than 128 characters")
	case len(sp.EdgeCNF) > 128:
		return errors.New("spec.edgeCNF is longer than 128 characters")
	case sp.Management.SidecarProxy != "" && sp.Management.SidecarProxy != "yes" && sp.Management.SidecarProxy != "no":
		return fmt.Errorf("spec.management.sidecarProxy %q: yes or no", sp.Management.SidecarProxy)
	case sp.Management.TLSType != "" && !slices.Contains([]string{"MUTUAL", "SIMPLE", "NONE"}, sp.Management.TLSType):
		return fmt.Errorf("spec.management.tlsType %q: MUTUAL, SIMPLE or NONE", sp.Management.TLSType)
	}
	c := sp.External.ExternalCerts
	for _, f := range []struct{ field, value string }{
		{"serviceCertificate", c.ServiceCertificate}, {"servicePrivateKey", c.ServicePrivateKey}, {"caCertificate", c.CACertificate},
	} {
		if len(f.value) > 8192 {
			return fmt.Errorf("spec.external.externalCerts.%s is longer than 8192 characters", f.field)
		}
	}
	return nil
}

var protocolRE = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)

func checkClient(_ context.Context, q *api.Request[ClientSpec]) error {
	return badRequest(validateClient(q.Resource().Spec))
}

func validateClient(sp ClientSpec) error {
	if err := names("spec.app", sp.App, "spec.serviceName", sp.ServiceName); err != nil {
		return err
	}
	if _, _, err := ParseLabel("spec.appLabel", sp.AppLabel); err != nil {
		return err
	}
	for i, ns := range sp.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("spec.namespaces[%d] %q is not a namespace name: %s", i, ns, strings.Join(errs, "; "))
		}
	}
	for i, c := range sp.CIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("spec.cidrs[%d] %q is not a CIDR such as 10.20.0.0/16", i, c)
		}
	}
	return nil
}

func checkAccessPoint(_ context.Context, q *api.Request[AccessPointSpec]) error {
	return badRequest(validateAccessPoint(q.Resource().Spec))
}

// urlRE is EMCO's pattern of an access point's path.
var urlRE = regexp.MustCompile(`^(/)([A-Za-z0-9][-A-Za-z0-9_./]*)?[A-Za-z0-9*]$`)

func validateAccessPoint(sp AccessPointSpec) error {
	if sp.Action != "ALLOW" {
		return fmt.Errorf("spec.action %q: ALLOW is the only action", sp.Action)
	}
	for i, u := range sp.URL {
		if len(u) > 4096 || !urlRE.MatchString(u) {
			return fmt.Errorf("spec.url[%d] %q: a path such as /status/* (at most 4096 characters)", i, u)
		}
	}
	for i, a := range sp.Access {
		if !slices.Contains([]string{"GET", "PUT", "POST", "DELETE"}, a) {
			return fmt.Errorf("spec.access[%d] %q: GET, PUT, POST or DELETE", i, a)
		}
	}
	return nil
}

func checkSubcontroller(_ context.Context, q *api.Request[model.ControllerSpec]) error {
	return badRequest(validateSubcontroller(q.Resource().Spec))
}

// validateSubcontroller: EMCO's schema (an action controller with host, port and a
// priority 1..100); temco's external controllers name a task queue instead of host/port.
func validateSubcontroller(sp model.ControllerSpec) error {
	switch {
	case sp.Type != "action":
		return fmt.Errorf("spec.type %q: dtc sub-controllers are of type action", sp.Type)
	case sp.Priority < 1 || sp.Priority > 100:
		return fmt.Errorf("spec.priority %d is out of range 1..100 (dtc runs higher priorities first)", sp.Priority)
	case len(sp.Host) > 128:
		return errors.New("spec.host is longer than 128 characters")
	case len(sp.TaskQueue) > 200 || strings.ContainsFunc(sp.TaskQueue, unicode.IsSpace):
		return fmt.Errorf("spec.taskQueue %q: a Temporal task queue name of at most 200 characters without spaces", sp.TaskQueue)
	case sp.TaskQueue != "":
		return nil
	case sp.Host == "":
		return errors.New("spec.host is required (or spec.taskQueue for an external controller worker)")
	case sp.Port < 1 || sp.Port > 65535:
		return fmt.Errorf("spec.port %d is out of range 1..65535", sp.Port)
	}
	return nil
}

// ParseLabel splits a "key=value" label, checked as Kubernetes checks labels.
func ParseLabel(field, s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("%s %q: one label as key=value, e.g. app=web", field, s)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return "", "", fmt.Errorf("%s %q: key %q: %s", field, s, key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return "", "", fmt.Errorf("%s %q: value %q: %s", field, s, value, strings.Join(errs, "; "))
	}
	return key, value, nil
}

func names(fieldValues ...string) error {
	for i := 0; i < len(fieldValues); i += 2 {
		if err := model.ValidateName(fieldValues[i], fieldValues[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func badRequest(err error) error {
	if err != nil {
		return api.BadRequest("%v", err)
	}
	return nil
}
