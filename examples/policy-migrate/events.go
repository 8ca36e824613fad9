package main

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
)

// EMCO's events protocol (EMCO's src/policy/pkg/grpc/events.proto), written out here
// without generated code: the agent is the gRPC server of
//
//	service events { rpc EventUpdate(ServerSpec) returns (stream Event); }
//	message ServerSpec { int32 serverId = 1; }
//	message Event { string eventId = 1; string agentId = 2; string contextId = 3;
//	                string appName = 4; google.protobuf.Any spec = 5; bytes metricList = 6; }
//	message AgentSpec { string agentId = 1; }
//
// Event.spec holds an AgentSpec, type URL type.googleapis.com/events.AgentSpec.

// event is one Event.
type event struct {
	eventID, agentID, contextID, appName string
	metricList                           []byte
}

const agentSpecURL = "type.googleapis.com/events.AgentSpec"

// encode is the event's protobuf encoding.
func (e event) encode() []byte {
	agentSpec := appendString(nil, 1, e.agentID)
	spec := appendBytes(appendString(nil, 1, agentSpecURL), 2, agentSpec)
	b := appendString(nil, 1, e.eventID)
	b = appendString(b, 2, e.agentID)
	b = appendString(b, 3, e.contextID)
	b = appendString(b, 4, e.appName)
	b = appendBytes(b, 5, spec)
	return appendBytes(b, 6, e.metricList)
}

func appendString(b []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return b // proto3 leaves empty fields out
	}
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
}

func appendBytes(b []byte, n protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
}

// frame is a message as it is on the wire; rawCodec passes it through, so the service
// needs no generated message types.
type frame struct{ data []byte }

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("cannot send a %T", v)
	}
	return f.data, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("cannot receive into a %T", v)
	}
	f.data = append(f.data[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// eventsService is the events service as gRPC needs it, in place of generated code.
var eventsService = grpc.ServiceDesc{
	ServiceName: "events.events",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "EventUpdate",
		ServerStreams: true,
		Handler:       func(srv any, ss grpc.ServerStream) error { return srv.(*agent).eventUpdate(srv, ss) },
	}},
	Metadata: "events.proto",
}
