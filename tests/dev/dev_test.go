package dev

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/devstack"
)

// devCmd prepares `temco dev` with one cluster on free ports.
func devCmd(t *testing.T, data string, apiPort int) *exec.Cmd {
	t.Helper()
	ports := []string{}
	for _, flag := range []string{"--temporal-port", "--ui-port", "--mongo-port", "--metrics-port", "--traces-port", "--otlp-port"} {
		p, err := devstack.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, flag, strconv.Itoa(p))
	}
	base, err := devstack.FreeClusterBase(2)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"dev", "--bin", binDir, "--data", data, "--clusters", "1", "--api-port", strconv.Itoa(apiPort),
		"--cluster-base-port", strconv.Itoa(base)}, ports...)
	return exec.Command(filepath.Join(tmpRoot, "temco"), args...)
}

// children lists the processes whose command line mentions dir (the stack's own).
func children(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmd), dir) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// runDev starts `temco dev` and waits for its summary.
func runDev(t *testing.T, cmd *exec.Cmd) *bufio.Scanner {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	// A slow start is not a failed one: make test starts four other stacks meanwhile, and
	// their clusters take start slots first (devstack's startGate).
	deadline := time.AfterFunc(10*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "Stop with Ctrl-C") {
			summary := strings.Join(lines, "\n")
			if !strings.Contains(summary, "Temporal Web UI") || !strings.Contains(summary, "/clusters/cluster1/kubeconfig") ||
				!strings.Contains(summary, "cert-manager      controller on cluster1") || !strings.Contains(summary, "(Jaeger: ") {
				t.Fatalf("summary lacks the UI URL, the kubeconfig path, cert-manager or the traces' collector:\n%s", summary)
			}
			return sc
		}
	}
	t.Fatalf("temco dev ended before it was ready:\n%s", strings.Join(lines, "\n"))
	return nil
}

// stopDev sends `temco dev` SIGINT and fails the test unless it ends within a minute,
// leaving no process of the stack on data behind.
func stopDev(t *testing.T, cmd *exec.Cmd, data string) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("temco dev did not stop within a minute of SIGINT")
	}
	if left := children(data); len(left) > 0 {
		t.Fatalf("processes left after SIGINT:\n%s", strings.Join(left, "\n"))
	}
}

// `temco dev` stops every child on SIGINT and reuses its data on the next start.
func TestDevStackStopsCleanlyAndReusesItsData(t *testing.T) {
	data := filepath.Join(tmpRoot, "devtest")
	apiPort, _ := devstack.FreePort()
	api := fmt.Sprintf("http://127.0.0.1:%d/v2", apiPort)
	stop := func(cmd *exec.Cmd) {
		t.Helper()
		stopDev(t, cmd, data)
	}
	first := devCmd(t, data, apiPort)
	runDev(t, first)
	req, _ := http.NewRequest("POST", api+"/projects", strings.NewReader(`{"metadata":{"name":"kept"}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create project: %v %v", resp, err)
	}
	resp.Body.Close()
	stop(first)

	second := devCmd(t, data, apiPort)
	runDev(t, second)
	defer stop(second)
	resp, err = http.Get(api + "/projects/kept")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after a restart the project is gone: %v %v", resp, err)
	}
	resp.Body.Close()
}

// A port already taken fails fast, naming the port and its use.
func TestDevStackRefusesATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := devCmd(t, filepath.Join(tmpRoot, "taken"), port)
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("port %d (temco api) on 127.0.0.1 is already in use", port)) {
		t.Fatalf("temco dev with a taken port: %v\n%s", err, out)
	}
}
