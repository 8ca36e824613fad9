package flow

import (
	"encoding/json"
	"time"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// EMCO's policy controller in temco (docs/policy.md): one PolicyAgent workflow per
// registered agent holds the agent's event stream open (ListenPolicyAgent) and
// hands each event to the Policy workflow of the DIG whose context it names
// (SignalPolicyEvent, signal-with-start). That workflow evaluates the DIG's policy
// intents naming the event (EvaluatePolicy) and, when a policy asks for action,
// starts the workflow intent it names as an abandoned child, once per decision, and
// records the decision (RecordPolicy).
const (
	WorkflowPolicyAgent = "PolicyAgent"
	WorkflowPolicy      = "Policy"
	OpPolicy            = "policy" // the operation search attribute of a DIG's Policy workflow

	// SignalPolicyEvent carries a PolicyEvent to a DIG's Policy workflow.
	SignalPolicyEvent = "policy-event"
	// QueryPolicy answers a Policy workflow's pending events and decisions so far.
	QueryPolicy = "policy"

	policyAgentPrefix = "policy-agent/"
	policyPrefix      = "policy/"
)

// WorkflowID is the id of the DIG's Policy workflow.
func WorkflowID(d lifecycle.Target) string {
	return policyPrefix + d.WorkflowID()[len("dig/"):]
}

// PolicyAgentInput names a registered agent (/v2/policy/agents/{name}).
type PolicyAgentInput struct {
	Name string `json:"name"`
}

// WorkflowID is the id of the agent's PolicyAgent workflow.
func (in PolicyAgentInput) WorkflowID() string { return policyAgentPrefix + in.Name }

// ID is the agent's store id.
func (in PolicyAgentInput) ID() string { return "/policy/agents/" + in.Name }

// PolicyListened is how one listening attempt ended without failing: the agent is gone
// (the workflow ends) or the attempt ran its course and a new one takes over.
type PolicyListened struct {
	Gone bool `json:"gone,omitempty"`
}

// PolicyAgentStatus is what an agent's listener last recorded in the agent's document,
// answered by GET /v2/policy/agents/{name}/status.
type PolicyAgentStatus struct {
	Addr      string    `json:"addr"`
	Connected bool      `json:"connected"`
	Since     time.Time `json:"since,omitzero"` // of the connection, or of the failure
	LastEvent time.Time `json:"lastEvent,omitzero"`
	// Events counts what the agent sent since temco first listened to it; Delivered the
	// events handed to a DIG's policy intents; Unmatched those naming a context temco does
	// not know or whose DIG has no policy intent for them; Dropped those refused (too
	// large, not JSON, no context); Foreign those naming a context whose DIG has no app (or
	// not the app named) on the agent's clusters; Spoofed those claiming to come from
	// another registered agent. Foreign and spoofed events are never evaluated.
	Events    int64  `json:"events"`
	Delivered int64  `json:"delivered"`
	Unmatched int64  `json:"unmatched"`
	Dropped   int64  `json:"dropped"`
	Foreign   int64  `json:"foreign"`
	Spoofed   int64  `json:"spoofed"`
	LastError string `json:"lastError,omitempty"`
}

// PolicyEvent is one agent event for one policy intent of a DIG.
type PolicyEvent struct {
	Intent    string    `json:"intent"` // the policy intent's name
	EventID   string    `json:"eventId"`
	Agent     string    `json:"agent"`  // the agent's own id, as its events claim (EMCO's agentSpec)
	Source    string    `json:"source"` // the registered agent it came through: what intents match
	ContextID string    `json:"contextId"`
	App       string    `json:"app,omitempty"`
	At        time.Time `json:"at"`
	// AgentSpec and Payload are the event's spec and metric list, as JSON.
	AgentSpec json.RawMessage `json:"agentSpec,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
}

// PolicyInput starts a DIG's Policy workflow; Pending carries the events not yet
// evaluated over a continue-as-new.
type PolicyInput struct {
	DIG     lifecycle.Target `json:"dig"`
	Pending []PolicyEvent    `json:"pending,omitempty"`
}

// PolicyEvaluateInput asks for one evaluation of a policy intent.
type PolicyEvaluateInput struct {
	DIG   lifecycle.Target `json:"dig"`
	Event PolicyEvent      `json:"event"`
}

// PolicyVerdict is an evaluation's outcome: Gone when the intent no longer exists;
// else whether the policy asks for action and the workflow intent to start.
type PolicyVerdict struct {
	Gone           bool   `json:"gone,omitempty"`
	ActionRequired bool   `json:"actionRequired"`
	Workflow       string `json:"workflow,omitempty"` // the workflow intent's name
	Engine         string `json:"engine"`             // "embedded" or the external engine's URL
}

// PolicyActionInput asks for the workflow a decision starts: workflow intent Workflow of
// the DIG.
type PolicyActionInput struct {
	DIG      lifecycle.Target `json:"dig"`
	Workflow string           `json:"workflow"`
}

// PolicyDecision is one evaluation of a policy intent: the event, the verdict and, when
// it asked for action, the workflow started (or why none was).
type PolicyDecision struct {
	At             time.Time `json:"at"`
	EventID        string    `json:"eventId"`
	Agent          string    `json:"agent"`            // as the event claims
	Source         string    `json:"source,omitempty"` // the registered agent that delivered it
	ContextID      string    `json:"contextId"`
	App            string    `json:"app,omitempty"`
	Engine         string    `json:"engine,omitempty"`
	ActionRequired bool      `json:"actionRequired"`
	Workflow       string    `json:"workflow,omitempty"` // the workflow intent
	WorkflowID     string    `json:"workflowID,omitempty"`
	RunID          string    `json:"runID,omitempty"`
	// Outcome says what happened: "no action", "started", or why nothing was.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// PolicyRecord stores a decision in its policy intent's document.
type PolicyRecord struct {
	DIG      lifecycle.Target `json:"dig"`
	Intent   string           `json:"intent"`
	Decision PolicyDecision   `json:"decision"`
}

// PolicyStatus is a policy intent's record: counts, the last evaluation and the decisions
// that asked for action, newest last (at most PolicyDecisionsKept).
type PolicyStatus struct {
	Evaluations int64            `json:"evaluations"`
	Actions     int64            `json:"actions"`
	Last        *PolicyDecision  `json:"last,omitempty"`
	Decisions   []PolicyDecision `json:"decisions"`
}

// PolicyDecisionsKept bounds the decisions a policy intent's record keeps (the Policy
// workflow's history has every one).
const PolicyDecisionsKept = 50

func init() { lifecycle.DeclareWorkflows(WorkflowPolicyAgent, WorkflowPolicy) }

// work (work.Activities): an agent's event stream, a policy intent's
// evaluation, the workflow a decision starts, and the decision's record.
var byPolicy = lifecycle.Implementer{Package: "features/policy/work", Struct: "Activities"}

var (
	ListenPolicyAgent = lifecycle.Declare[PolicyAgentInput, PolicyListened](byPolicy, "ListenPolicyAgent")
	EvaluatePolicy    = lifecycle.Declare[PolicyEvaluateInput, PolicyVerdict](byPolicy, "EvaluatePolicy")
	PolicyAction      = lifecycle.Declare[PolicyActionInput, contract.Workflow](byPolicy, "PolicyAction")
	RecordPolicy      = lifecycle.Declare[PolicyRecord, lifecycle.None](byPolicy, "RecordPolicy")
)
