package policyevents

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// eventUpdateDesc describes EventUpdate to gRPC: one request, a stream of
// replies.
var eventUpdateDesc = grpc.StreamDesc{StreamName: methodName, ServerStreams: true}

// Agent says how to reach an agent: its address ("host:port") and, optionally, the TLS
// configuration that verifies it and a bearer token it expects.
type Agent struct {
	Addr string
	// TLS dials the agent over TLS; nil: plain gRPC, as EMCO's agents serve and EMCO's
	// policy controller dials.
	TLS *tls.Config
	// Token, when set, is sent with the call as metadata "authorization: Bearer <token>".
	Token string
}

// Listen receives events from the EMCO agent a, the way EMCO's policy controller
// does: it connects (without TLS unless a.TLS is set), calls EventUpdate with serverId
// 1003 and reads the stream.
//
// connected, if not nil, is called once, when the agent has answered the
// call with its response headers. handle is called for each event, in the
// order received; an error from handle stops Listen and is returned as is.
// An event whose spec is not a decodable events.AgentSpec is still handed
// over, with AgentSpec nil, so the caller decides what to do with it.
//
// Listen returns ctx.Err() once ctx is done. Otherwise it returns an error
// naming the address when the call fails or ends: "agent <addr> closed the stream"
// when the agent ends it normally; a TLS handshake that fails says why. Messages over
// MaxEventBytes fail the call. Connecting does not wait for the agent to become
// reachable: if it cannot be reached, the call fails as soon as the connection attempt
// does.
func Listen(ctx context.Context, a Agent, connected func(), handle func(Event) error) error {
	addr := a.Addr
	if handle == nil {
		return errors.New("policyevents: Listen needs a handle function")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("agent address %q: %w", addr, err)
	}
	creds := insecure.NewCredentials()
	if a.TLS != nil {
		creds = credentials.NewTLS(a.TLS)
	}
	// "passthrough" hands addr to the dialer untouched, as grpc.Dial (which
	// EMCO uses) does, instead of parsing it as a URL and resolving it.
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxEventBytes)),
	)
	if err != nil {
		return fmt.Errorf("agent %s: %w", addr, err)
	}
	defer conn.Close()

	// Cancelling this context on return also ends the call on the agent.
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.Token != "" {
		callCtx = metadata.AppendToOutgoingContext(callCtx, "authorization", "Bearer "+a.Token)
	}

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
