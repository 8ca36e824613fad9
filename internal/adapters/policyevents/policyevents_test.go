package policyevents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// startAgent serves the events service through Register on a free local port
// and returns its address.
func startAgent(t *testing.T, stream func(ctx context.Context, serverID int32, send func(Event) error) error) string {
	t.Helper()
	s := grpc.NewServer()
	Register(s, stream)
	return serve(t, s)
}

// startRawAgent is startAgent for tests that send hand-built messages.
func startRawAgent(t *testing.T, stream func(ctx context.Context, serverID int32, sendMsg func(proto.Message) error) error) string {
	t.Helper()
	s := grpc.NewServer()
	register(s, stream)
	return serve(t, s)
}

func serve(t *testing.T, s *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return lis.Addr().String()
}

// testContext bounds each test so that a bug cannot hang the run.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("invalid JSON %q: %v", got, err)
		return false
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("invalid expected JSON %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

var errStop = errors.New("test: enough events")

func TestListenReceivesEventsInOrder(t *testing.T) {
	ctx := testContext(t)
	metric := func(i int) []byte {
		return []byte(`{"metric":"memory_usage_bytes","contextId":"ctx-1","appName":"app","value":{"v":` + string(rune('0'+i)) + `}}`)
	}
	sent := []Event{
		{EventID: "e0", AgentID: "EMCOTEST", ContextID: "ctx-1", AppName: "app", AgentSpec: json.RawMessage(`{"agentId":"EMCOTEST"}`), MetricList: metric(0)},
		{EventID: "e1", AgentID: "EMCOTEST", ContextID: "ctx-1", AppName: "app", AgentSpec: json.RawMessage(` { "agentId" : "EMCOTEST" } `), MetricList: metric(1)},
		{EventID: "e2", AgentID: "EMCOTEST", ContextID: "ctx-1", AppName: "app", AgentSpec: json.RawMessage(`{"agentId":"EMCOTEST"}`), MetricList: metric(2)},
	}
	serverIDs := make(chan int32, 1)
	addr := startAgent(t, func(ctx context.Context, serverID int32, send func(Event) error) error {
		serverIDs <- serverID
		for _, ev := range sent {
			if err := send(ev); err != nil {
				return err
			}
		}
		<-ctx.Done() // keep the stream open until the client leaves
		return nil
	})

	var connects atomic.Int32
	var got []Event
	err := Listen(ctx, Agent{Addr: addr}, func() { connects.Add(1) }, func(ev Event) error {
		if connects.Load() != 1 {
			t.Errorf("event %q handled with connected called %d times, want 1", ev.EventID, connects.Load())
		}
		got = append(got, ev)
		if len(got) == len(sent) {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Listen = %v, want the handler's error", err)
	}
	if n := connects.Load(); n != 1 {
		t.Errorf("connected called %d times, want 1", n)
	}
	if id := <-serverIDs; id != 1003 {
		t.Errorf("server saw serverId %d, want 1003", id)
	}
	for i, ev := range got {
		want := sent[i]
		if ev.EventID != want.EventID || ev.AgentID != want.AgentID || ev.ContextID != want.ContextID || ev.AppName != want.AppName {
			t.Errorf("event %d = %+v, want %+v", i, ev, want)
		}
		if !jsonEqual(t, ev.AgentSpec, []byte(`{"agentId":"EMCOTEST"}`)) {
			t.Errorf("event %d AgentSpec = %s", i, ev.AgentSpec)
		}
		if !bytes.Equal(ev.MetricList, want.MetricList) {
			t.Errorf("event %d MetricList = %q, want %q", i, ev.MetricList, want.MetricList)
		}
	}
}

func TestListenEventWithoutSpecOrMetrics(t *testing.T) {
	ctx := testContext(t)
	addr := startAgent(t, func(ctx context.Context, _ int32, send func(Event) error) error {
		if err := send(Event{EventID: "bare"}); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	var got Event
	err := Listen(ctx, Agent{Addr: addr}, nil, func(ev Event) error { got = ev; return errStop })
	if !errors.Is(err, errStop) {
		t.Fatalf("Listen = %v", err)
	}
	if got.EventID != "bare" || got.AgentSpec != nil || got.MetricList != nil {
		t.Errorf("got %+v, want only EventID set", got)
	}
}

func TestListenEmptyAgentIDKeepsShape(t *testing.T) {
	ctx := testContext(t)
	addr := startAgent(t, func(ctx context.Context, _ int32, send func(Event) error) error {
		if err := send(Event{EventID: "e", AgentSpec: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	var got Event
	if err := Listen(ctx, Agent{Addr: addr}, nil, func(ev Event) error { got = ev; return errStop }); !errors.Is(err, errStop) {
		t.Fatalf("Listen = %v", err)
	}
	if !jsonEqual(t, got.AgentSpec, []byte(`{"agentId":""}`)) {
		t.Errorf("AgentSpec = %s, want {\"agentId\":\"\"}", got.AgentSpec)
	}
}

func TestListenStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	serverDone := make(chan error, 1)
	addr := startAgent(t, func(ctx context.Context, _ int32, send func(Event) error) error {
		err := send(Event{EventID: "only"})
		<-ctx.Done()
		serverDone <- ctx.Err()
		return err
	})
	var handled int
	err := Listen(ctx, Agent{Addr: addr}, nil, func(Event) error {
		handled++
		cancel() // no more events will come; cancelling must end Listen
		return nil
	})
	if !errors.Is(err, context.Canceled) || err != ctx.Err() {
		t.Fatalf("Listen = %v, want ctx.Err() (context.Canceled)", err)
	}
	if handled != 1 {
		t.Errorf("handled %d events, want 1", handled)
	}
	if err := <-serverDone; err == nil {
		t.Error("the agent's stream context was not ended")
	}
}

func TestListenCancelBeforeConnected(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	addr := startRawAgent(t, func(ctx context.Context, _ int32, _ func(proto.Message) error) error {
		<-ctx.Done()
		return nil
	})
	// Register sends headers before calling stream, so connected fires
	// with no event sent; cancel from there.
	err := Listen(ctx, Agent{Addr: addr}, cancel, func(Event) error {
		t.Error("no event was sent")
		return nil
	})
	if err != context.Canceled {
		t.Fatalf("Listen = %v, want context.Canceled", err)
	}
}

func TestListenAgentEndsStream(t *testing.T) {
	ctx := testContext(t)
	addr := startAgent(t, func(_ context.Context, _ int32, send func(Event) error) error {
		return send(Event{EventID: "last"})
	})
	var handled int
	err := Listen(ctx, Agent{Addr: addr}, nil, func(Event) error { handled++; return nil })
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Listen = %v, want a stream-ended error", err)
	}
	if want := "agent " + addr + " closed the stream"; err.Error() != want {
		t.Errorf("Listen error %q, want %q", err, want)
	}
	if handled != 1 {
		t.Errorf("handled %d events, want 1", handled)
	}
}

func TestListenAgentFailsStream(t *testing.T) {
	ctx := testContext(t)
	addr := startAgent(t, func(context.Context, int32, func(Event) error) error {
		return status.Error(codes.Internal, "collector broke")
	})
	err := Listen(ctx, Agent{Addr: addr}, nil, func(Event) error { return nil })
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Listen = %v, want the agent's error", err)
	}
	if !strings.Contains(err.Error(), addr) || status.Code(err) != codes.Internal {
		t.Errorf("Listen error %q should name %s and keep code Internal", err, addr)
	}
}

func TestListenRejectsOversizedEvent(t *testing.T) {
	ctx := testContext(t)
	addr := startAgent(t, func(ctx context.Context, _ int32, send func(Event) error) error {
		// Just under the limit, then just over it.
		if err := send(Event{EventID: "fits", MetricList: bytes.Repeat([]byte("x"), MaxEventBytes-64)}); err != nil {
			return err
		}
		_ = send(Event{EventID: "too big", MetricList: bytes.Repeat([]byte("x"), MaxEventBytes+1)})
		<-ctx.Done()
		return nil
	})
	var ids []string
	err := Listen(ctx, Agent{Addr: addr}, nil, func(ev Event) error {
		ids = append(ids, ev.EventID)
		return nil
	})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Listen = %v, want a size error", err)
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), addr) {
		t.Errorf("Listen error %q: want ResourceExhausted naming %s", err, addr)
	}
	if !reflect.DeepEqual(ids, []string{"fits"}) {
		t.Errorf("handled %q, want only the event that fits", ids)
	}
}

func TestListenPassesOnUnknownOrBrokenSpec(t *testing.T) {
	ctx := testContext(t)
	withSpec := func(id, typeURL string, value []byte) proto.Message {
		m := newEventMessage()
		m.Set(events.eventID, protoreflect.ValueOfString(id))
		m.Set(events.metricList, protoreflect.ValueOfBytes([]byte(`{"n":1}`)))
		a := m.NewField(events.spec).Message()
		a.Set(events.anyTypeURL, protoreflect.ValueOfString(typeURL))
		a.Set(events.anyValue, protoreflect.ValueOfBytes(value))
		m.Set(events.spec, protoreflect.ValueOfMessage(a))
		return m
	}
	msgs := []proto.Message{
		withSpec("unknown", "type.googleapis.com/other.Thing", []byte{0x0a, 0x03, 'a', 'b', 'c'}),
		// Truncated: a 5-byte string with only 1 byte present.
		withSpec("broken", agentSpecURL, []byte{0x0a, 0x05, 'a'}),
		// Another type from events.proto is not an AgentSpec either.
		withSpec("serverspec", "type.googleapis.com/events.ServerSpec", []byte{0x08, 0x01}),
		// A well-formed AgentSpec under a non-Google URL prefix is fine.
		withSpec("good", "example.com/x/events.AgentSpec", []byte{0x0a, 0x01, 'Z'}),
	}
	addr := startRawAgent(t, func(ctx context.Context, _ int32, sendMsg func(proto.Message) error) error {
		for _, m := range msgs {
			if err := sendMsg(m); err != nil {
				return err
			}
		}
		<-ctx.Done()
		return nil
	})
	var got []Event
	err := Listen(ctx, Agent{Addr: addr}, nil, func(ev Event) error {
		got = append(got, ev)
		if len(got) == len(msgs) {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Listen = %v", err)
	}
	for _, ev := range got[:3] {
		if ev.AgentSpec != nil {
			t.Errorf("event %q: AgentSpec = %s, want nil", ev.EventID, ev.AgentSpec)
		}
		if string(ev.MetricList) != `{"n":1}` {
			t.Errorf("event %q: MetricList = %q", ev.EventID, ev.MetricList)
		}
	}
	if !jsonEqual(t, got[3].AgentSpec, []byte(`{"agentId":"Z"}`)) {
		t.Errorf("event good: AgentSpec = %s", got[3].AgentSpec)
	}
}

func TestListenUnreachableAgentFails(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	connected := false
	err = Listen(ctx, Agent{Addr: addr}, func() { connected = true }, func(Event) error { return nil })
	if err == nil {
		t.Fatal("Listen to a closed port returned nil")
	}
	// The call must fail on its own, not wait for the deadline.
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Listen waited for the deadline: %v", err)
	}
	if !strings.Contains(err.Error(), addr) || status.Code(err) != codes.Unavailable {
		t.Errorf("Listen error %q: want Unavailable naming %s", err, addr)
	}
	if connected {
		t.Error("connected called for an unreachable agent")
	}
}

func TestListenBadArguments(t *testing.T) {
	ctx := testContext(t)
	if err := Listen(ctx, Agent{Addr: "no-port"}, nil, func(Event) error { return nil }); err == nil {
		t.Error("Listen accepted an address without a port")
	}
	if err := Listen(ctx, Agent{Addr: "127.0.0.1:1"}, nil, nil); err == nil {
		t.Error("Listen accepted a nil handler")
	}
}

func TestSendRejectsBadAgentSpec(t *testing.T) {
	ctx := testContext(t)
	bad := []json.RawMessage{
		json.RawMessage(`not json`),
		json.RawMessage(`{"bogus":1}`),
		json.RawMessage(`{"agentId":7}`),
		json.RawMessage(`["EMCOTEST"]`),
		json.RawMessage(`"EMCOTEST"`),
		json.RawMessage(`null`),
	}
	sendErrs := make(chan []error, 1)
	addr := startAgent(t, func(ctx context.Context, _ int32, send func(Event) error) error {
		var errs []error
		for _, spec := range bad {
			errs = append(errs, send(Event{EventID: "bad", AgentSpec: spec}))
		}
		sendErrs <- errs
		if err := send(Event{EventID: "good", AgentSpec: json.RawMessage(`{"agentId":"A"}`)}); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	var got []Event
	err := Listen(ctx, Agent{Addr: addr}, nil, func(ev Event) error { got = append(got, ev); return errStop })
	if !errors.Is(err, errStop) {
		t.Fatalf("Listen = %v", err)
	}
	for i, err := range <-sendErrs {
		if err == nil {
			t.Errorf("send accepted AgentSpec %s", bad[i])
		}
	}
	if len(got) != 1 || got[0].EventID != "good" || !jsonEqual(t, got[0].AgentSpec, []byte(`{"agentId":"A"}`)) {
		t.Errorf("got %+v, want only the good event", got)
	}
}

// TestWireMatchesSchema builds an Event's bytes field by field, as code
// generated by protoc from events.proto would lay them out, and checks that
// the dynamic messages read them and write the same fields back.
func TestWireMatchesSchema(t *testing.T) {
	metrics := []byte(`{"metric":"memory_usage_bytes","contextId":"c1","appName":"a1","value":{"x":1}}`)

	var agentSpec []byte
	agentSpec = protowire.AppendTag(agentSpec, 1, protowire.BytesType)
	agentSpec = protowire.AppendString(agentSpec, "EMCOTEST")

	var anyBytes []byte
	anyBytes = protowire.AppendTag(anyBytes, 1, protowire.BytesType)
	anyBytes = protowire.AppendString(anyBytes, "type.googleapis.com/events.AgentSpec")
	anyBytes = protowire.AppendTag(anyBytes, 2, protowire.BytesType)
	anyBytes = protowire.AppendBytes(anyBytes, agentSpec)

	var wire []byte
	for _, f := range []struct {
		num protowire.Number
		val []byte
	}{
		{1, []byte("ev-1")},
		{2, []byte("EMCOTEST")},
		{3, []byte("c1")},
		{4, []byte("a1")},
		{5, anyBytes},
		{6, metrics},
	} {
		wire = protowire.AppendTag(wire, f.num, protowire.BytesType)
		wire = protowire.AppendBytes(wire, f.val)
	}

	msg := newEventMessage()
	if err := proto.Unmarshal(wire, msg); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if len(msg.GetUnknown()) != 0 {
		t.Errorf("fields left unknown: %x", msg.GetUnknown())
	}
	ev := decodeEvent(msg)
	if ev.EventID != "ev-1" || ev.AgentID != "EMCOTEST" || ev.ContextID != "c1" || ev.AppName != "a1" {
		t.Errorf("decoded %+v", ev)
	}
	if !bytes.Equal(ev.MetricList, metrics) {
		t.Errorf("MetricList = %q", ev.MetricList)
	}
	if !jsonEqual(t, ev.AgentSpec, []byte(`{"agentId":"EMCOTEST"}`)) {
		t.Errorf("AgentSpec = %s", ev.AgentSpec)
	}

	// Encoding the decoded event gives the same message back.
	enc, err := encodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(enc, msg) {
		t.Errorf("re-encoded event differs:\n got %v\nwant %v", enc, msg)
	}

	// ServerSpec{serverId: 1003} is field 1 as a varint.
	req, err := proto.Marshal(newServerSpec(controllerID))
	if err != nil {
		t.Fatal(err)
	}
	want := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1003)
	if !bytes.Equal(req, want) {
		t.Errorf("ServerSpec bytes %x, want %x", req, want)
	}
}

func TestSchemaNames(t *testing.T) {
	fd := events.file
	if fd.Path() != "events.proto" || fd.Package() != "events" || fd.Syntax() != protoreflect.Proto3 {
		t.Errorf("file %s package %s syntax %v", fd.Path(), fd.Package(), fd.Syntax())
	}
	svc := fd.Services().ByName("events")
	if svc == nil {
		t.Fatal("no events service")
	}
	m := svc.Methods().ByName("EventUpdate")
	if m == nil || !m.IsStreamingServer() || m.IsStreamingClient() ||
		m.Input().FullName() != "events.ServerSpec" || m.Output().FullName() != "events.Event" {
		t.Fatalf("EventUpdate method = %v", m)
	}
	if got := "/" + string(svc.FullName()) + "/" + string(m.Name()); got != "/events.events/EventUpdate" {
		t.Errorf("full method %q", got)
	}
	if events.spec.Message().FullName() != "google.protobuf.Any" {
		t.Errorf("spec type %s", events.spec.Message().FullName())
	}
	// The local registry resolves the AgentSpec type URL.
	if mt, err := events.types.FindMessageByURL("type.googleapis.com/events.AgentSpec"); err != nil || mt.Descriptor().FullName() != "events.AgentSpec" {
		t.Errorf("local registry lookup: %v, %v", mt, err)
	}
}
