package devstack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartGateHoldsAtMostItsSlots(t *testing.T) {
	g := startGate{dir: t.TempDir(), slots: 2}
	ctx := context.Background()
	first, err := g.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := g.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := g.take(short); err == nil {
		t.Fatal("a third start took a slot while both were held")
	}
	got := make(chan error, 1)
	go func() {
		release, err := g.take(ctx)
		if err == nil {
			release()
		}
		got <- err
	}()
	first()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a start waiting for a slot did not take the one given back")
	}
	second()
}

// A cluster's processes start at the normal priority and yield the CPU once started:
// every thread ends at clusterNice.
func TestStartedClusterYieldsTheCPU(t *testing.T) {
	if n := niceOf(t, os.Getpid()); n != 0 {
		t.Skipf("the test runs at nice %d: its children start there", n)
	}
	bin := t.TempDir()
	if err := os.Symlink("/bin/sleep", filepath.Join(bin, "etcd")); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Name: "c", BinDir: bin, Dir: t.TempDir(), procs: map[string]*Proc{}}
	p, err := c.startProc("etcd", "60")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if n := niceOf(t, p.Cmd.Process.Pid); n != 0 {
		t.Fatalf("started at nice %d, want 0", n)
	}
	c.yieldCPU()
	if n := niceOf(t, p.Cmd.Process.Pid); n != clusterNice {
		t.Fatalf("nice %d after yielding, want %d", n, clusterNice)
	}
}

// niceOf reads a process's nice value, the 19th field of /proc/<pid>/stat.
func niceOf(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])) // after the command's name
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
