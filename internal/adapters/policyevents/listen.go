package policyevents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// eventUpdateDesc describes EventUpdate to gRPC: one request, a stream of
// replies.
var eventUpdateDesc = grpc.StreamDesc{StreamName: methodName, ServerStreams: true}

// Listen receives events from the EMCO agent at addr ("host:port"), the way
// EMCO's policy controller does: it connects without TLS (agents serve
// plain gRPC), calls EventUpdate with serverId 1003 and reads the stream.
//
// connected, if not nil, is called once, when the agent has answered the
// call with its response headers. handle is called for each event, in the
// order received; an error from handle stops Listen and is returned as is.
// An event whose spec is not a decodable events.AgentSpec is still handed
// over, with AgentSpec nil, so the caller decides what to do with it.
//
// Listen returns ctx.Err() once ctx is done. Otherwise it returns an error
// naming addr when the call fails or ends: "agent <addr> closed the stream"
// when the agent ends it normally. Messages over MaxEventBytes fail the
// call. Connecting does not wait for the agent to become reachable: if it
// cannot be reached, the call fails as soon as the connection attempt does.
func Listen(ctx context.Context, addr string, connected func(), handle func(Event) error) error {
	if handle == nil {
		return errors.New("policyevents: Listen needs a handle function")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("agent address %q: %w", addr, err)
	}
	// "passthrough" hands addr to the dialer untouched, as grpc.Dial (which
	// EMCO uses) does, instead of parsing it as a URL and resolving it.
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxEventBytes)),
	)
	if err != nil {
		return fmt.Errorf("agent %s: %w", addr, err)
	}
	defer conn.Close()

	// Cancelling this context on return also ends the call on the agent.
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	// fail turns a gRPC error into Listen's result: ctx's own error when ctx
	// is done, since that is why the call ended.
	fail := func(what string, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("agent %s: %s: %w", addr, what, err)
	}

	stream, err := conn.NewStream(callCtx, &eventUpdateDesc, fullMethodName)
	if err != nil {
		return fail("starting EventUpdate", err)
	}
	if err := stream.SendMsg(newServerSpec(controllerID)); err != nil && !errors.Is(err, io.EOF) {
		// io.EOF here means the call already ended; RecvMsg reports why.
		return fail("sending EventUpdate request", err)
	}
	if err := stream.CloseSend(); err != nil {
		return fail("closing EventUpdate request", err)
	}
	// Header waits for the agent's response headers. It returns no headers
	// (and no error) if the call failed or ended first; RecvMsg then says how.
	if md, _ := stream.Header(); md != nil && connected != nil {
		connected()
	}
	for {
		msg := newEventMessage()
		if err := stream.RecvMsg(msg); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("agent %s closed the stream", addr)
			}
			return fail("receiving events", err)
		}
		if err := handle(decodeEvent(msg)); err != nil {
			return err
		}
	}
}
