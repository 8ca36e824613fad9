package devstack

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestATakenPortIsNamed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	err = CheckPortsFree(map[string]int{"ferretdb": port})
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)+" (ferretdb)") {
		t.Fatalf("error %v", err)
	}
	free, _ := FreePort()
	if err := CheckPortsFree(map[string]int{"api": free}); err != nil {
		t.Fatal(err)
	}
}

// A port handed out is below the ephemeral range, where no outgoing connection takes it
// before its server binds it, and is not handed out again.
func TestFreePortsAreBelowTheEphemeralRangeAndDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < 12000 || p >= 20000 || seen[p] {
			t.Fatalf("port %d (seen before: %v)", p, seen[p])
		}
		seen[p] = true
	}
}

// A name another process holds (here: another open file, locked as a process would) is
// not reserved; once it lets go, it is.
func TestAPortReservedElsewhereIsNotHandedOut(t *testing.T) {
	name := "test-" + strconv.Itoa(os.Getpid())
	path := filepath.Join(os.TempDir(), "temco-ports", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	other, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if reserve(name) {
		t.Fatal("reserved a name another process holds")
	}
	other.Close()
	if !reserve(name) {
		t.Fatal("a name let go is not reserved")
	}
	if reserve(name) {
		t.Fatal("a name reserved twice by one process")
	}
}

// A process that exits says why in its error: its log's last line.
func TestAnExitNamesTheLogsLastLine(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	p, err := StartProc("x", log, "sh", []string{"-c", "echo starting; echo 'temco: metrics listener: address already in use' >&2; exit 1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if err := p.Exited(); err == nil || !strings.Contains(err.Error(), `exited (exit status 1): "temco: metrics listener: address already in use"; see `) {
		t.Fatalf("error %v", err)
	}
}
