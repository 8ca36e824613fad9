package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/testenv"
)

// The jobs this test binary does as a child.
var (
	echo  = Job{Name: "echo", Noun: "echo", Work: func(in io.Reader, out io.Writer) error { _, err := io.Copy(out, in); return err }}
	eat   = Job{Name: "eat", Noun: "meal", Work: func(io.Reader, io.Writer) error { eatMemory(); return nil }}
	spin  = Job{Name: "spin", Noun: "spin", Work: func(io.Reader, io.Writer) error { select {} }}
	crash = Job{Name: "crash", Noun: "crash", Work: func(io.Reader, io.Writer) error { panic("the job's own bug") }}
	fail  = Job{Name: "fail", Noun: "failure", Work: func(io.Reader, io.Writer) error { return errors.New("cannot") }}
	big   = Job{Name: "big", Noun: "answer", Work: func(_ io.Reader, out io.Writer) error {
		_, err := out.Write(make([]byte, 1<<20))
		return err
	}}
	pid = Job{Name: "pid", Noun: "pid", Work: func(in io.Reader, out io.Writer) error {
		if _, err := io.ReadAll(in); err != nil { // as a job does: its request first
			return err
		}
		_, err := fmt.Fprint(out, os.Getpid())
		return err
	}}
	jobs = []Job{echo, eat, spin, crash, fail, big, pid}
)

// TestMain lets this test binary be the sandbox's child, as the worker's binary is.
func TestMain(m *testing.M) {
	ChildMain(jobs...)
	spareIdle = 2 * time.Second // TestAnUnusedSpareEnds
	refillAfter = 100 * time.Millisecond
	os.Exit(m.Run())
}

// eaten keeps what eatMemory allocates reachable.
var eaten [][]byte

// eatMemory allocates 64 MiB at a time, touching each, until the process dies.
func eatMemory() {
	for {
		b := make([]byte, 64<<20)
		for i := range b {
			b[i] = 1
		}
		eaten = append(eaten, b)
	}
}

func testSandbox(t *testing.T) *Sandbox {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Sandbox{Exe: exe, Memory: 256 << 20}
}

// A job's answer is what the child wrote for the request it was sent.
func TestAJobAnswersItsRequest(t *testing.T) {
	out, err := testSandbox(t).Run(context.Background(), echo, []byte("hello"), time.Minute, 1024)
	if err != nil || string(out) != "hello" {
		t.Fatalf("answered %q, %v; want hello", out, err)
	}
}

// Each way a child ends without an answer comes back as its own error: what the job took
// (memory, time) and its crash are the job's; what the sandbox could not do is a Fault.
func TestAChildThatEndsWithoutAnAnswerSaysWhy(t *testing.T) {
	s := testSandbox(t)
	for _, c := range []struct {
		job     Job
		timeout time.Duration
		want    func(error) bool
		says    string
	}{
		{eat, time.Minute, func(err error) bool { var e *OutOfMemory; return errors.As(err, &e) && e.Memory == 256<<20 }, "needs more than 256 MiB of memory"},
		{spin, time.Second, func(err error) bool { var e *TimedOut; return errors.As(err, &e) && e.After == time.Second }, "did not end within 1s"},
		{crash, time.Minute, func(err error) bool { return errors.As(err, new(*Crashed)) }, "panic: the job's own bug"},
		{fail, time.Minute, func(err error) bool { return errors.As(err, new(*Fault)) }, "the failure ended without an answer: exit status 2"},
		{big, time.Minute, func(err error) bool { return errors.As(err, new(*Fault)) }, "the answer's answer is larger than 1024 bytes"},
		{Job{Name: "unknown", Noun: "mystery"}, time.Minute, func(err error) bool { return errors.As(err, new(*Fault)) }, "the mystery ended without an answer"},
	} {
		_, err := s.Run(context.Background(), c.job, nil, c.timeout, 1024)
		if !c.want(err) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("job %s: %v (%T), want an error saying %q", c.job.Name, err, err, c.says)
		}
	}
	if kids, err := testenv.Children(os.Getpid()); err != nil || len(kids) > 0 {
		t.Fatalf("child processes %v left behind (%v)", kids, err)
	}
}

// A sandbox whose binary cannot run is a Fault, and a cancelled context is the context's
// error, not the job's.
func TestASandboxThatCannotRunIsAFault(t *testing.T) {
	s := &Sandbox{Exe: "/nonexistent/temco", Memory: 256 << 20}
	if _, err := s.Run(context.Background(), echo, nil, time.Minute, 1024); !errors.As(err, new(*Fault)) || !strings.Contains(err.Error(), "run the echo") {
		t.Errorf("%v (%T), want a Fault", err, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := testSandbox(t).Run(ctx, echo, nil, time.Minute, 1024); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// Call and Serve carry requests and answers in JSON.
func TestCallSendsAndReadsJSON(t *testing.T) {
	type pair struct{ A, B string }
	answer, err := Call[pair](context.Background(), testSandbox(t), echo, pair{"a", "b"}, time.Minute, 1024)
	if err != nil || answer != (pair{"a", "b"}) {
		t.Fatalf("answered %+v, %v", answer, err)
	}
	var out strings.Builder
	swap := Serve(func(p pair) pair { return pair{p.B, p.A} })
	if err := swap(strings.NewReader(`{"A":"x","B":"y"}`), &out); err != nil || out.String() != "{\"A\":\"y\",\"B\":\"x\"}\n" {
		t.Fatalf("served %q, %v", out.String(), err)
	}
	if err := swap(strings.NewReader(`not json`), &out); err == nil {
		t.Fatal("a request that is not JSON was served")
	}
}
