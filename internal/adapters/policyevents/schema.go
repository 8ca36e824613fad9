// Package policyevents speaks the "events" gRPC protocol that EMCO's policy
// controller uses to receive events from its agents (such as EMCO's metrics
// collector). The agent is the gRPC server: it serves one server-streaming
// method, /events.events/EventUpdate, and the controller dials it and reads
// the stream.
//
// The protocol's schema is written out here as a descriptor and its messages
// are handled with dynamicpb, so no generated code (and no protoc) is needed.
// The bytes on the wire are the same as those protoc-generated code produces
// for the same schema.
package policyevents

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
)

// Names that appear on the wire. They must match what EMCO's peers expect.
const (
	protoFileName   = "events.proto"
	protoPackage    = "events"
	serviceName     = "events.events"
	methodName      = "EventUpdate"
	fullMethodName  = "/" + serviceName + "/" + methodName
	agentSpecName   = "events.AgentSpec"
	agentSpecURL    = "type.googleapis.com/" + agentSpecName
	controllerID    = 1003 // the serverId EMCO's policy controller sends
	anyTypeURLField = 1    // google.protobuf.Any.type_url
	anyValueField   = 2    // google.protobuf.Any.value
)

// schema holds the resolved descriptors of events.proto and the fields the
// package reads and writes, looked up once.
type schema struct {
	file protoreflect.FileDescriptor
	// types holds the file's message types. It is deliberately not the
	// global registry, so that this package cannot clash with (or be
	// affected by) another copy of events.proto linked into the binary.
	types *protoregistry.Types

	event, serverSpec, agentSpec protoreflect.MessageDescriptor

	eventID, agentID, contextID, appName, spec, metricList protoreflect.FieldDescriptor
	serverID                                               protoreflect.FieldDescriptor
	agentSpecAgentID                                       protoreflect.FieldDescriptor
	anyTypeURL, anyValue                                   protoreflect.FieldDescriptor
}

// events is built at package initialisation; the schema is fixed, so a failure
// here is a programming error.
var events = mustBuildSchema()

// fileDescriptorProto writes out events.proto by hand, field for field, as
// protoc would describe it.
func fileDescriptorProto() *descriptorpb.FileDescriptorProto {
	field := func(name string, number int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{
			Name:     proto.String(name),
			JsonName: proto.String(name), // all names are already lowerCamelCase
			Number:   proto.Int32(number),
			Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type:     typ.Enum(),
		}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	const (
		tString  = descriptorpb.FieldDescriptorProto_TYPE_STRING
		tBytes   = descriptorpb.FieldDescriptorProto_TYPE_BYTES
		tInt32   = descriptorpb.FieldDescriptorProto_TYPE_INT32
		tMessage = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	)
	return &descriptorpb.FileDescriptorProto{
		Name:       proto.String(protoFileName),
		Package:    proto.String(protoPackage),
		Dependency: []string{anypb.File_google_protobuf_any_proto.Path()},
		Syntax:     proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{
				Name: proto.String("Event"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("eventId", 1, tString, ""),
					field("agentId", 2, tString, ""),
					field("contextId", 3, tString, ""),
					field("appName", 4, tString, ""),
					field("spec", 5, tMessage, ".google.protobuf.Any"),
					field("metricList", 6, tBytes, ""),
				},
			},
			{
				Name:  proto.String("ServerSpec"),
				Field: []*descriptorpb.FieldDescriptorProto{field("serverId", 1, tInt32, "")},
			},
			{
				Name:  proto.String("AgentSpec"),
				Field: []*descriptorpb.FieldDescriptorProto{field("agentId", 1, tString, "")},
			},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("events"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name:            proto.String(methodName),
				InputType:       proto.String(".events.ServerSpec"),
				OutputType:      proto.String(".events.Event"),
				ServerStreaming: proto.Bool(true),
			}},
		}},
	}
}

func mustBuildSchema() *schema {
	s, err := buildSchema()
	if err != nil {
		panic(fmt.Sprintf("policyevents: building events.proto descriptor: %v", err))
	}
	return s
}

func buildSchema() (*schema, error) {
	// any.proto is registered globally by the anypb package imported above.
	fd, err := protodesc.NewFile(fileDescriptorProto(), protoregistry.GlobalFiles)
	if err != nil {
		return nil, err
	}
	s := &schema{file: fd, types: new(protoregistry.Types)}
	msgs := fd.Messages()
	s.event = msgs.ByName("Event")
	s.serverSpec = msgs.ByName("ServerSpec")
	s.agentSpec = msgs.ByName("AgentSpec")
	for _, md := range []protoreflect.MessageDescriptor{s.event, s.serverSpec, s.agentSpec} {
		if md == nil {
			return nil, fmt.Errorf("message missing from descriptor")
		}
		if err := s.types.RegisterMessage(dynamicpb.NewMessageType(md)); err != nil {
			return nil, err
		}
	}
	ef := s.event.Fields()
	s.eventID = ef.ByNumber(1)
	s.agentID = ef.ByNumber(2)
	s.contextID = ef.ByNumber(3)
	s.appName = ef.ByNumber(4)
	s.spec = ef.ByNumber(5)
	s.metricList = ef.ByNumber(6)
	s.serverID = s.serverSpec.Fields().ByNumber(1)
	s.agentSpecAgentID = s.agentSpec.Fields().ByNumber(1)
	anyFields := s.spec.Message().Fields()
	s.anyTypeURL = anyFields.ByNumber(anyTypeURLField)
	s.anyValue = anyFields.ByNumber(anyValueField)
	if s.anyTypeURL == nil || s.anyValue == nil {
		return nil, fmt.Errorf("google.protobuf.Any lacks type_url or value")
	}
	if got := "/" + string(fd.Services().Get(0).FullName()) + "/" + string(fd.Services().Get(0).Methods().Get(0).Name()); got != fullMethodName {
		return nil, fmt.Errorf("method name %q, want %q", got, fullMethodName)
	}
	return s, nil
}
