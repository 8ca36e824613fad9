package policyevents_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/dev/testenv"
)

var errStop = errors.New("test: enough events")

func pool(t *testing.T, pem string) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM([]byte(pem)) {
		t.Fatal("the test CA does not parse")
	}
	return p
}

func TestListenOverTLSWithTheAdminsCAAndAToken(t *testing.T) {
	addr, ca, events, auth := testenv.PolicyAgentTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events <- policyevents.Event{EventID: "e", ContextID: "c"}
	a := policyevents.Agent{Addr: addr, TLS: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool(t, ca), ServerName: "agent.test"},
		Token: "s3cret"}
	var got policyevents.Event
	if err := policyevents.Listen(ctx, a, nil, func(ev policyevents.Event) error { got = ev; return errStop }); !errors.Is(err, errStop) {
		t.Fatalf("Listen over TLS = %v", err)
	}
	if got.EventID != "e" {
		t.Errorf("event %+v", got)
	}
	if h := <-auth; h != "Bearer s3cret" {
		t.Errorf("the agent saw authorization %q, want the token", h)
	}

	// Without a token, none is sent (the call is left once the agent answered).
	a.Token = ""
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := policyevents.Listen(cctx, a, stop, func(policyevents.Event) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen without a token = %v", err)
	}
	if h := <-auth; h != "" {
		t.Errorf("authorization %q sent without a token", h)
	}
}

func TestListenRefusesAnAgentAnotherCASigned(t *testing.T) {
	addr, _, _, _ := testenv.PolicyAgentTLS(t)
	other, _ := testenv.TestCertificate(t, "agent.test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connected := false
	err := policyevents.Listen(ctx, policyevents.Agent{Addr: addr, TLS: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool(t, other)}},
		func() { connected = true }, func(policyevents.Event) error { return nil })
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "certificate signed by unknown authority") ||
		!strings.Contains(err.Error(), addr) {
		t.Errorf("Listen to an agent of another CA = %v, want the reason naming the agent", err)
	}
	if connected {
		t.Error("connected to an agent whose certificate does not verify")
	}
	// Plain gRPC to a TLS agent fails too.
	if err := policyevents.Listen(ctx, policyevents.Agent{Addr: addr}, nil, func(policyevents.Event) error { return nil }); err == nil ||
		errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("plain gRPC to a TLS agent = %v", err)
	}
}
