package ovnaction

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/temco/temco/contract"
)

// The annotations EMCO's ovnaction writes, and their fixed values.
const (
	nfnKey      = "k8s.plugin.opnfv.org/nfn-network" // read by Nodus (ovn4nfv)
	networksKey = "k8s.v1.cni.cncf.io/networks"      // read by Multus
	cniOVN4NFV  = "ovn4nfv"
)

// multusAttachment is the entry of networksKey that hands the pod to Nodus through
// Multus: the NetworkAttachmentDefinition ovn-networkobj in namespace default.
var multusAttachment = json.RawMessage(`{"name":"ovn-networkobj","namespace":"default"}`)

const multusAttachmentName = "ovn-networkobj"

// nfnAnnotation is the value of nfnKey, in EMCO's encoding.
type nfnAnnotation struct {
	Type      string          `json:"type"`
	Interface []InterfaceSpec `json:"interface"`
}

// podAnnotations are the pod annotations of one workload as the plan changes them.
type podAnnotations struct {
	metadata []string // the path to the metadata that holds the pod's annotations
	nfn      nfnAnnotation
	// networks is networksKey's value once Multus is attached (nil until then); own is
	// the workload's value as written.
	networks []json.RawMessage
	own      string
}

// readPodAnnotations finds a workload's pod template and reads its annotations.
func readPodAnnotations(r contract.Resource) (*podAnnotations, error) {
	var obj map[string]any
	if err := json.Unmarshal(r.Manifest, &obj); err != nil {
		return nil, fmt.Errorf("cannot be read: %v", err)
	}
	path, err := podMetadata(r, obj)
	if err != nil {
		return nil, err
	}
	meta, err := lookup(obj, path)
	if err != nil {
		return nil, err
	}
	annotations, err := mapAt(meta, "annotations", path)
	if err != nil {
		return nil, err
	}
	p := &podAnnotations{metadata: path}
	nfn, err := stringAt(annotations, nfnKey, path)
	if err != nil {
		return nil, err
	}
	if nfn != "" {
		if err := json.Unmarshal([]byte(nfn), &p.nfn); err != nil {
			return nil, fmt.Errorf("has annotation %s %q, which is not the JSON Nodus reads: %v", nfnKey, nfn, err)
		}
	}
	if p.own, err = stringAt(annotations, networksKey, path); err != nil {
		return nil, err
	}
	return p, nil
}

// podMetadata is where a workload keeps its pods' metadata: a Pod its own, a CronJob in
// its job template, every other workload in spec.template.
func podMetadata(r contract.Resource, obj map[string]any) ([]string, error) {
	group, _, grouped := strings.Cut(r.APIVersion, "/")
	switch {
	case r.Kind == "Pod" && !grouped:
		return []string{"metadata"}, nil
	case r.Kind == "CronJob" && group == "batch":
		return []string{"spec", "jobTemplate", "spec", "template", "metadata"}, nil
	}
	spec, _ := obj["spec"].(map[string]any)
	if _, ok := spec["template"].(map[string]any); !ok {
		return nil, fmt.Errorf("has no pod template (spec.template) to annotate")
	}
	return []string{"spec", "template", "metadata"}, nil
}

// lookup returns the object at path (nil when some part is absent).
func lookup(obj map[string]any, path []string) (map[string]any, error) {
	cur := obj
	for i, k := range path {
		next, err := mapAt(cur, k, path[:i])
		if err != nil || next == nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

func mapAt(m map[string]any, key string, where []string) (map[string]any, error) {
	switch v := m[key].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("has %s that is not an object", strings.Join(append(where[:len(where):len(where)], key), "."))
}

func stringAt(annotations map[string]any, key string, where []string) (string, error) {
	switch v := annotations[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("has annotation %s in %s that is not a string", key, strings.Join(where, "."))
}

// addInterfaces merges interfaces into the nfn annotation as EMCO does: an interface
// already there (same network and name) takes the new defaultGateway, IP and MAC address
// in its place; the others are appended in order. The CNI type is always ovn4nfv.
func (p *podAnnotations) addInterfaces(add []InterfaceSpec) {
	have := p.nfn.Interface
	out := make([]InterfaceSpec, 0, len(have)+len(add))
	for _, h := range have {
		for _, a := range add {
			if sameInterface(h, a) {
				h.DefaultGateway, h.IPAddress, h.MACAddress = a.DefaultGateway, a.IPAddress, a.MACAddress
				break
			}
		}
		out = append(out, h)
	}
	for _, a := range add {
		known := false
		for _, h := range have {
			known = known || sameInterface(h, a)
		}
		if !known {
			out = append(out, a)
		}
	}
	p.nfn = nfnAnnotation{Type: cniOVN4NFV, Interface: out}
}

// attachMultus adds ovn-networkobj to the Multus networks unless one of that name is there.
func (p *podAnnotations) attachMultus() error {
	if p.networks == nil {
		list, err := parseNetworks(p.own)
		if err != nil {
			return fmt.Errorf("has annotation %s %q, which Multus cannot read: %v", networksKey, p.own, err)
		}
		p.networks = list
	}
	for _, n := range p.networks {
		var e struct{ Name string }
		if json.Unmarshal(n, &e) == nil && e.Name == multusAttachmentName {
			return nil
		}
	}
	p.networks = append(p.networks, multusAttachment)
	return nil
}

// parseNetworks reads a Multus networks annotation: a JSON list of network selection
// elements, or the text form "net,ns/net@if". Like EMCO, it returns the text form as JSON.
func parseNetworks(s string) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	if strings.ContainsAny(s, `[{"`) {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("not a JSON list: %v", err)
		}
		for i, e := range out {
			var sel map[string]any
			if err := json.Unmarshal(e, &sel); err != nil || sel == nil {
				return nil, fmt.Errorf("entry %d, %s, is not an object", i, e)
			}
		}
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		sel, err := parseNetworkText(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		e, err := json.Marshal(sel)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// networkSelection is the text form's entry as JSON, with Multus' field names.
type networkSelection struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Interface string `json:"interface,omitempty"`
}

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// parseNetworkText reads "[namespace/]name[@interface]".
func parseNetworkText(item string) (networkSelection, error) {
	var sel networkSelection
	rest := item
	if ns, name, ok := strings.Cut(item, "/"); ok {
		sel.Namespace, rest = strings.TrimSpace(ns), name
	}
	if strings.Contains(rest, "/") {
		return sel, fmt.Errorf("%q has more than one '/'", item)
	}
	name, iface, ok := strings.Cut(rest, "@")
	sel.Name = strings.TrimSpace(name)
	if ok {
		sel.Interface = strings.TrimSpace(iface)
		if strings.Contains(iface, "@") {
			return sel, fmt.Errorf("%q has more than one '@'", item)
		}
	}
	for _, part := range []string{sel.Namespace, sel.Name, sel.Interface} {
		if part != "" && !dnsLabelRE.MatchString(part) {
			return sel, fmt.Errorf("%q in %q is not a lower-case DNS label", part, item)
		}
	}
	if sel.Name == "" {
		return sel, fmt.Errorf("%q names no network", item)
	}
	return sel, nil
}

// patch is the JSON merge patch that writes the annotations into the workload.
func (p *podAnnotations) patch() (json.RawMessage, error) {
	nfn, err := json.Marshal(p.nfn)
	if err != nil {
		return nil, err
	}
	annotations := map[string]any{nfnKey: string(nfn)}
	if p.networks != nil {
		networks, err := json.Marshal(p.networks)
		if err != nil {
			return nil, err
		}
		annotations[networksKey] = string(networks)
	}
	var doc any = map[string]any{"annotations": annotations}
	for i := len(p.metadata) - 1; i >= 0; i-- {
		doc = map[string]any{p.metadata[i]: doc}
	}
	return json.Marshal(doc)
}
