package devstack

import (
	"net"
	"strconv"
	"strings"
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
