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
