package testenv

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/temco/temco/internal/adapters/policyevents"
)

// EMCOMemoryPolicy is the policy of EMCO's examples/test-policy README, in Rego v0 as it is
// written there: action when agent EMCOTEST reports memory_usage_bytes over 999999999.
const EMCOMemoryPolicy = `package emco

import future.keywords.in

default actionRequired := false

actionRequired {
   input.agentSpec.agentId == "EMCOTEST"
   input.event.metric == "memory_usage_bytes"
   some item in input.event.value.items
   to_number(item.value) > 999999999
}
`

// PolicyAgent serves EMCO's events protocol on a local port until the test ends, as EMCO's
// metrics collector does: every caller is sent what the test puts on the returned
// channel. It returns the agent's address.
func PolicyAgent(t *testing.T) (string, chan<- policyevents.Event) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan policyevents.Event, 16)
	s := grpc.NewServer()
	policyevents.Register(s, func(ctx context.Context, _ int32, send func(policyevents.Event) error) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case ev := <-events:
				if err := send(ev); err != nil {
					return err
				}
			}
		}
	})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String(), events
}
