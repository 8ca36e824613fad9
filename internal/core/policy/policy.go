// Package policy is EMCO's policy controller in temco's terms (docs/policy.md): agents
// that stream events, a DIG's policy intents (which event, which policy, which workflow
// intent to start), the project's own Rego policies for the embedded engine, the input a
// policy is evaluated with and what its answer asks for. Pure: no I/O.
package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/temco/temco/internal/core/model"
)

// Intent is a policy intent's spec, with EMCO's keys.
type Intent struct {
	Policy   Engine    `json:"policy"`
	Actor    string    `json:"actor"`
	ActorArg *ActorArg `json:"actorArg,omitempty"`
	Event    EventRef  `json:"event"`
	// SupportingEvents are EMCO's; neither EMCO nor temco reads them.
	SupportingEvents []EventRef `json:"supportingEvent,omitempty"`
}

// Engine names the policy: an OPA server (EngineURL, EMCO's "host:port/v1" without a
// scheme, or a URL) and the Data API path below it (PolicyName); without an engine URL,
// the project's policies evaluated by temco's embedded engine at that path. Namespace is
// the key of the answer's result that holds the verdict (EMCO always reads "emco").
type Engine struct {
	EngineURL  string `json:"engineUrl,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	PolicyName string `json:"policyName"`
}

// ActorArg is the temporal actor's argument: the workflow intent of the DIG to start.
// WorkFlowMgr is EMCO's workflowmgr address; temco's workflowmgr is its own, so it is
// accepted and not used.
type ActorArg struct {
	WorkFlowMgr  string `json:"workFlowMgr,omitempty"`
	WorkFlowName string `json:"workFlowName"`
}

// EventRef names the event an intent is evaluated on: its id and, optionally, the
// registered agent (its name) it must come from ("" for any).
type EventRef struct {
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
}

// ActorTemporal is the only actor, as in EMCO: start a workflow intent.
const ActorTemporal = "temporal"

// DefaultNamespace is the result key EMCO reads the verdict from.
const DefaultNamespace = "emco"

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks what EMCO would find wrong only when an event came (no actor, no
// workflow name) and what could never be evaluated.
func (in *Intent) Validate() error {
	if in.Actor != ActorTemporal {
		return fmt.Errorf("spec.actor must be %q (the only actor: it starts a workflow intent of the DIG), got %q", ActorTemporal, in.Actor)
	}
	if in.ActorArg == nil || in.ActorArg.WorkFlowName == "" {
		return errors.New("spec.actorArg.workFlowName is required: the workflow intent of this DIG to start")
	}
	if err := model.ValidateName("spec.actorArg.workFlowName", in.ActorArg.WorkFlowName); err != nil {
		return err
	}
	if in.Event.ID == "" {
		return errors.New("spec.event.id is required: the event (e.g. the metric) the policy is evaluated on")
	}
	if len(in.Event.ID) > 253 || strings.ContainsAny(in.Event.ID, "\x00\n") {
		return errors.New("spec.event.id must be a line of at most 253 characters")
	}
	if in.Event.Agent != "" && len(in.Event.Agent) > 253 {
		return errors.New("spec.event.agent must be at most 253 characters")
	}
	if ns := in.Policy.Namespace; ns != "" && !identifier.MatchString(ns) {
		return fmt.Errorf("spec.policy.namespace %q is not a Rego identifier (the result key of the verdict, e.g. emco)", ns)
	}
	if _, err := in.Policy.Path(); err != nil {
		return err
	}
	if in.Policy.EngineURL != "" {
		if _, err := in.Policy.URL(); err != nil {
			return err
		}
	}
	return nil
}

// NamespaceOrDefault is the result key the verdict is read from.
func (e Engine) NamespaceOrDefault() string {
	if e.Namespace == "" {
		return DefaultNamespace
	}
	return e.Namespace
}

// Path is PolicyName as a Data API path below the engine ("data", "data/emco"); a path
// naming no document is refused.
func (e Engine) Path() (string, error) {
	p := strings.Trim(e.PolicyName, "/")
	if p == "" {
		return "", errors.New("spec.policy.policyName is required: the Data API path of the policy, e.g. data or data/emco")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "?#%\\ ") {
			return "", fmt.Errorf("spec.policy.policyName %q is not a Data API path (segments separated by /)", e.PolicyName)
		}
	}
	if e.EngineURL == "" {
		if rest := strings.TrimPrefix(p, "v1/"); rest != "data" && !strings.HasPrefix(rest, "data/") {
			return "", fmt.Errorf("spec.policy.policyName %q: without spec.policy.engineUrl the embedded engine answers paths below data (data, data/<package>)", e.PolicyName)
		}
	}
	return p, nil
}

// URL is where an external engine is asked: EMCO's http://<engineUrl>/<policyName>, or
// the engine URL as given when it has a scheme.
func (e Engine) URL() (*url.URL, error) {
	raw := e.EngineURL
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("spec.policy.engineUrl %q is not an OPA server's host:port/path or http(s) URL", e.EngineURL)
	}
	p, err := e.Path()
	if err != nil {
		return nil, err
	}
	return u.JoinPath(p), nil
}

// Matches reports whether an event is the one ref names: its id, and the registered
// agent that delivered it (never the id the event claims, which the agent chooses).
func (ref EventRef) Matches(eventID, registeredAgent string) bool {
	return ref.ID == eventID && (ref.Agent == "" || ref.Agent == registeredAgent)
}

// IntentKeys are the keys EMCO copies into a stored intent's spec, which its policies see
// in input.intentSpec.
type IntentKeys struct {
	PolicyIntentID        string `json:"policyIntentID"`
	Project               string `json:"project"`
	CompositeApp          string `json:"compositeApp"`
	CompositeAppVersion   string `json:"compositeAppVersion"`
	DeploymentIntentGroup string `json:"deploymentIntentGroup"`
}

// Input is the input a policy is evaluated with, as EMCO sends it (as the value of
// "input"): {intentSpec, agentSpec, event}, intentSpec being the intent's spec with its
// keys. The event must be JSON (EMCO's collector sends its measurement as JSON).
func Input(keys IntentKeys, in Intent, agentSpec, event json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(event) {
		return nil, errors.New("the event's metric list is not JSON")
	}
	if len(agentSpec) == 0 {
		agentSpec = json.RawMessage("null")
	}
	spec := struct {
		IntentKeys
		Intent
	}{keys, in}
	intentSpec, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]json.RawMessage{"intentSpec": intentSpec, "agentSpec": agentSpec, "event": event})
}

// Verdict is what a policy's answer asks for: action, and optionally another workflow
// intent than the intent's own.
type Verdict struct {
	ActionRequired bool   `json:"actionRequired"`
	WorkflowName   string `json:"workflowName,omitempty"`
}

// VerdictOf reads the verdict from an engine's answer ({"result": {<namespace>: {...}}}),
// as EMCO does: no result, or none under namespace, asks for nothing. A verdict that is
// not an object of the expected types is an error (EMCO would silently do nothing).
func VerdictOf(answer []byte, namespace string) (Verdict, error) {
	var doc struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(answer, &doc); err != nil {
		return Verdict{}, fmt.Errorf("the engine's answer is not a JSON object: %v", err)
	}
	if len(doc.Result) == 0 || string(doc.Result) == "null" {
		return Verdict{}, nil
	}
	var result map[string]json.RawMessage
	if err := json.Unmarshal(doc.Result, &result); err != nil {
		return Verdict{}, fmt.Errorf("the engine's result is not an object with key %q (is policyName the Data API path above package %s?)", namespace, namespace)
	}
	raw, ok := result[namespace]
	if !ok {
		return Verdict{}, nil
	}
	var v Verdict
	if err := json.Unmarshal(raw, &v); err != nil {
		return Verdict{}, fmt.Errorf("result.%s is not {actionRequired: bool, workflowName: string}: %v", namespace, err)
	}
	if v.WorkflowName != "" {
		if err := model.ValidateName("result."+namespace+".workflowName", v.WorkflowName); err != nil {
			return Verdict{}, err
		}
	}
	return v, nil
}

// Module is a project's policy, temco's own resource: one Rego module the embedded
// engine loads with the project's others.
type Module struct {
	Rego string `json:"rego"`
	// StandsInFor are OPA servers (host or host:port, as the project's policy intents name
	// them in engineUrl) whose place the project's policies take: an intent naming one is
	// evaluated by the embedded engine, at the Data API path its engineUrl and policyName
	// give. EMCO's intents name their OPA server's address, which a temco project need
	// not run nor an admin allow.
	StandsInFor []string `json:"standsInFor,omitempty"`
}

// maxStandsInFor bounds a policy's standsInFor.
const maxStandsInFor = 16

// Validate checks the OPA servers the policy stands in for (its Rego is compiled by the
// engine).
func (m *Module) Validate() error {
	if len(m.StandsInFor) > maxStandsInFor {
		return fmt.Errorf("spec.standsInFor names %d servers: the limit is %d", len(m.StandsInFor), maxStandsInFor)
	}
	for i, h := range m.StandsInFor {
		if _, _, err := splitServer(h); err != nil {
			return fmt.Errorf("spec.standsInFor[%d] %q: %v", i, h, err)
		}
	}
	return nil
}

// splitServer reads an OPA server as standsInFor names it: host or host:port (port ""
// for any), the host in lower case.
func splitServer(s string) (host, port string, err error) {
	if s == "" || len(s) > 261 || strings.ContainsAny(s, "/@?#% ") {
		return "", "", errors.New("give the OPA server's host or host:port, as engineUrl names it (no scheme, no path)")
	}
	host = s
	if h, p, err := net.SplitHostPort(s); err == nil {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("port %q is not 1-65535", p)
		}
		host, port = h, p
	} else if strings.Contains(s, ":") && net.ParseIP(strings.Trim(s, "[]")) == nil {
		return "", "", err // neither host:port nor an IPv6 address
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return "", "", errors.New("no host")
	}
	return host, port, nil
}

// StandsIn reports whether the engine URL u (Engine.URL) names one of servers, the OPA
// servers the project's policies stand in for.
func StandsIn(servers []string, u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, s := range servers {
		host, p, err := splitServer(s)
		if err == nil && host == strings.ToLower(u.Hostname()) && (p == "" || p == port) {
			return true
		}
	}
	return false
}

// StandInPath is the Data API path the embedded engine answers for an intent whose
// engineUrl names a server the project's policies stand in for: the path of
// <engineUrl>/<policyName>, which an OPA server would answer only below /v1/data.
func (e Engine) StandInPath() (string, error) {
	u, err := e.URL()
	if err != nil {
		return "", err
	}
	p := strings.Trim(u.Path, "/")
	if p != "v1/data" && !strings.HasPrefix(p, "v1/data/") {
		return "", fmt.Errorf("spec.policy: %s is not OPA's Data API (/v1/data/...), which the project's policies answer in place of %s", u, u.Host)
	}
	return p, nil
}
