package dev

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// childOf finds the process parent started with exactly args as its command line.
func childOf(parent int, args ...string) (int, bool) {
	want := strings.Join(args, "\x00") + "\x00"
	kids, _ := testenv.Children(parent)
	for _, pid := range kids {
		if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && string(cmd) == want {
			return pid, true
		}
	}
	return 0, false
}

// lineReader hands out the lines `temco dev` prints after its summary.
type lineReader struct {
	lines chan string
	seen  []string
}

func readLines(sc *bufio.Scanner) *lineReader {
	r := &lineReader{lines: make(chan string, 1000)}
	go func() {
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	return r
}

// expect waits for the next line matching re and returns its submatches.
func (r *lineReader) expect(t *testing.T, re string, timeout time.Duration) []string {
	t.Helper()
	pattern := regexp.MustCompile(re)
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("temco dev's output ended without a line matching %q:\n%s", re, strings.Join(r.seen, "\n"))
			}
			r.seen = append(r.seen, l)
			if m := pattern.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("no line matching %q within %s:\n%s", re, timeout, strings.Join(r.seen, "\n"))
		}
	}
}

// flagValue is the value that follows flag in args.
func flagValue(t *testing.T, args []string, flag string) string {
	t.Helper()
	i := slices.Index(args, flag)
	if i < 0 || i+1 == len(args) {
		t.Fatalf("%s is not in %q", flag, args)
	}
	return args[i+1]
}

// A worker that crashes under `temco dev` is restarted after the first backoff, the
// output says so, and the new worker serves (the restart waits until it polls its task
// queue) beside the api, which nothing disturbed.
func TestDevRestartsACrashedWorker(t *testing.T) {
	data := filepath.Join(tmpRoot, "crash")
	apiPort, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := devCmd(t, data, apiPort)
	out := readLines(runDev(t, cmd))
	defer stopDev(t, cmd, data)
	out.expect(t, `^A component that crashes is restarted with backoff`, 10*time.Second)

	self := filepath.Join(tmpRoot, "temco")
	worker, ok := childOf(cmd.Process.Pid, self, "worker")
	if !ok {
		t.Fatalf("no `temco worker` child of temco dev (%d)", cmd.Process.Pid)
	}
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	out.expect(t, `^temco dev: temco worker exited \(signal: killed\); restarting in 1s \(restart 1\)$`, 30*time.Second)
	m := out.expect(t, `^temco dev: temco worker restarted \(pid (\d+)\)$`, 2*time.Minute)
	restarted, _ := strconv.Atoi(m[1])
	if now, ok := childOf(cmd.Process.Pid, self, "worker"); !ok || now != restarted || now == worker {
		t.Fatalf("the worker was %d, the output says %d, temco dev's child is %d (found %v)", worker, restarted, now, ok)
	}
	for _, l := range out.seen {
		if strings.Contains(l, " exited ") && !strings.Contains(l, "temco worker exited") {
			t.Errorf("another component exited: %s", l)
		}
	}
	metrics := flagValue(t, cmd.Args, "--metrics-port")
	for _, url := range []string{fmt.Sprintf("http://127.0.0.1:%d/healthz", apiPort), "http://127.0.0.1:" + metrics + "/healthz"} {
		poll.Until(t, url, 30*time.Second, func(ctx context.Context) error { return devstack.HTTPOK(ctx, url) })
	}
}
