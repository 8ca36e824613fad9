package policyevents

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Register is the agent's side, for tests and for anyone writing an agent in
// Go: it registers the events service on s. stream is called for each
// EventUpdate call with the caller's serverId (1003 for EMCO's policy
// controller) and a send function that streams one event; when stream
// returns, the call ends, with stream's error as its status.
//
// send fails if ev.AgentSpec is set but is not JSON of the form
// {"agentId": "..."}, or if the call has ended. Like any gRPC service,
// Register must be called before s serves, and only once per server.
func Register(s *grpc.Server, stream func(ctx context.Context, serverID int32, send func(Event) error) error) {
	register(s, func(ctx context.Context, serverID int32, sendMsg func(proto.Message) error) error {
		return stream(ctx, serverID, func(ev Event) error {
			m, err := encodeEvent(ev)
			if err != nil {
				return err
			}
			return sendMsg(m)
		})
	})
}

// register is Register without the Event encoding: sendMsg streams any
// message as is. Tests use it to send events that Register cannot build.
func register(s *grpc.Server, stream func(ctx context.Context, serverID int32, sendMsg func(proto.Message) error) error) {
	s.RegisterService(&eventsServiceDesc, &eventsServer{stream: stream})
}

// eventsService is the handler type of eventsServiceDesc; gRPC checks that
// the registered implementation has it.
type eventsService interface {
	eventUpdate(grpc.ServerStream) error
}

type eventsServer struct {
	stream func(ctx context.Context, serverID int32, sendMsg func(proto.Message) error) error
}

// eventUpdate serves one EventUpdate call: it reads the ServerSpec, sends the
// response headers at once so the caller knows the stream is open even
// before the first event, and hands over to the stream function.
func (e *eventsServer) eventUpdate(ss grpc.ServerStream) error {
	req := newServerSpecMessage()
	if err := ss.RecvMsg(req); err != nil {
		return err
	}
	if err := ss.SendHeader(nil); err != nil {
		return err
	}
	serverID := int32(req.Get(events.serverID).Int())
	return e.stream(ss.Context(), serverID, func(m proto.Message) error {
		if err := ss.SendMsg(m); err != nil {
			return fmt.Errorf("sending event: %w", err)
		}
		return nil
	})
}

// eventsServiceDesc is the events service as gRPC needs it, written by hand
// in place of generated code.
var eventsServiceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*eventsService)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    methodName,
		ServerStreams: true,
		Handler: func(srv any, ss grpc.ServerStream) error {
			return srv.(eventsService).eventUpdate(ss)
		},
	}},
	Metadata: protoFileName,
}
