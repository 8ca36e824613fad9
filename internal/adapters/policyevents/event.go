package policyevents

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Event is one event an agent streamed, decoded.
type Event struct {
	EventID, AgentID, ContextID, AppName string
	// AgentSpec is the event's spec as JSON: an events.AgentSpec renders {"agentId":"..."}; nil when the event has no spec.
	// It is also nil when the spec holds another type or cannot be decoded,
	// so that one odd event does not stop the stream.
	AgentSpec json.RawMessage
	// MetricList is the agent's payload as sent (JSON for EMCO's collector).
	MetricList []byte
}

// MaxEventBytes bounds one received message (1 MiB).
const MaxEventBytes = 1 << 20

// newEventMessage returns an empty events.Event, ready to be unmarshalled into.
func newEventMessage() *dynamicpb.Message { return dynamicpb.NewMessage(events.event) }

// newServerSpecMessage returns an empty events.ServerSpec.
func newServerSpecMessage() *dynamicpb.Message { return dynamicpb.NewMessage(events.serverSpec) }

// newServerSpec returns an events.ServerSpec carrying serverID.
func newServerSpec(serverID int32) *dynamicpb.Message {
	m := newServerSpecMessage()
	m.Set(events.serverID, protoreflect.ValueOfInt32(serverID))
	return m
}

// decodeEvent reads an events.Event message into an Event.
func decodeEvent(m protoreflect.Message) Event {
	ev := Event{
		EventID:   m.Get(events.eventID).String(),
		AgentID:   m.Get(events.agentID).String(),
		ContextID: m.Get(events.contextID).String(),
		AppName:   m.Get(events.appName).String(),
	}
	if b := m.Get(events.metricList).Bytes(); len(b) > 0 {
		ev.MetricList = bytes.Clone(b)
	}
	if m.Has(events.spec) {
		ev.AgentSpec = agentSpecJSON(m.Get(events.spec).Message())
	}
	return ev
}

// agentSpecJSON renders the events.AgentSpec held in the google.protobuf.Any
// anyMsg as compact JSON, or returns nil if the Any holds some other type or
// its bytes do not decode.
func agentSpecJSON(anyMsg protoreflect.Message) json.RawMessage {
	url := anyMsg.Get(events.anyTypeURL).String()
	mt, err := events.types.FindMessageByURL(url)
	if err != nil || mt.Descriptor().FullName() != agentSpecName {
		return nil
	}
	spec := mt.New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: events.types}).Unmarshal(anyMsg.Get(events.anyValue).Bytes(), spec); err != nil {
		return nil
	}
	// Emit the agentId even when empty, so the JSON always has one shape.
	out, err := protojson.MarshalOptions{Resolver: events.types, EmitUnpopulated: true}.Marshal(spec)
	if err != nil {
		return nil
	}
	// protojson varies its whitespace on purpose; compact it so callers
	// get stable bytes.
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil {
		return nil
	}
	return buf.Bytes()
}

// encodeEvent builds the events.Event message for ev. A non-empty AgentSpec
// must be a JSON object of events.AgentSpec's shape ({"agentId": "..."}); it
// is packed into the spec Any as EMCO's agents do.
func encodeEvent(ev Event) (*dynamicpb.Message, error) {
	m := newEventMessage()
	setString := func(fd protoreflect.FieldDescriptor, v string) {
		if v != "" {
			m.Set(fd, protoreflect.ValueOfString(v))
		}
	}
	setString(events.eventID, ev.EventID)
	setString(events.agentID, ev.AgentID)
	setString(events.contextID, ev.ContextID)
	setString(events.appName, ev.AppName)
	if len(ev.MetricList) > 0 {
		m.Set(events.metricList, protoreflect.ValueOfBytes(bytes.Clone(ev.MetricList)))
	}
	if len(ev.AgentSpec) > 0 {
		spec := dynamicpb.NewMessage(events.agentSpec)
		if err := (protojson.UnmarshalOptions{Resolver: events.types}).Unmarshal(ev.AgentSpec, spec); err != nil {
			return nil, fmt.Errorf("event %q: agent spec is not an events.AgentSpec JSON object: %w", ev.EventID, err)
		}
		value, err := proto.MarshalOptions{Deterministic: true}.Marshal(spec)
		if err != nil {
			return nil, fmt.Errorf("event %q: encoding agent spec: %w", ev.EventID, err)
		}
		anyMsg := m.NewField(events.spec).Message()
		anyMsg.Set(events.anyTypeURL, protoreflect.ValueOfString(agentSpecURL))
		anyMsg.Set(events.anyValue, protoreflect.ValueOfBytes(value))
		m.Set(events.spec, protoreflect.ValueOfMessage(anyMsg))
	}
	return m, nil
}
