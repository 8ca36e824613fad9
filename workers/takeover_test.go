package workers

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestAPredecessorIsAnotherProcessInTheSameSlot(t *testing.T) {
	me := Identity{PID: 1, Name: "worker-0.temco", Slot: 2, Nonce: "aa"}
	for identity, want := range map[string]bool{
		"1@worker-0.temco/2/bb":    true, // a container's restart: the same pid, another nonce
		"7@worker-0.temco/2/cc":    true,
		"1@worker-0.temco/2/aa":    false, // this process
		"7@worker-0.temco/3/cc":    false, // another slot: a live worker on the host
		"7@worker-1.temco/2/cc":    false, // another name
		"7@worker-0.temco.x/2/cc":  false,
		"7@worker-0/temco/2/cc":    false,
		"1234@worker-0.temco":      false, // the SDK's default identity
		"":                         false,
		"worker-0.temco/2/cc":      false,
		"7@worker-0.temco/2/cc/dd": false,
	} {
		if got := me.Predecessor(identity); got != want {
			t.Errorf("Predecessor(%q) = %v, want %v", identity, got, want)
		}
	}
	if id := NewIdentity("h", 3); !id.Predecessor(Identity{PID: 9, Name: "h", Slot: 3, Nonce: "x"}.String()) || id.Predecessor(id.String()) {
		t.Errorf("%s: String and Predecessor disagree", id)
	}
}

// Two workers of a task queue on one host hold different slots; a slot is free again once
// its holder is gone (here: released; a dead process's lock goes with it).
func TestWorkersOfAHostHoldDifferentSlots(t *testing.T) {
	dir := t.TempDir()
	a, releaseA, err := ClaimSlot(dir, "default", "temco")
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, err := ClaimSlot(dir, "default", "temco")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if a != 0 || b != 1 {
		t.Errorf("slots %d and %d, want 0 and 1", a, b)
	}
	if other, release, err := ClaimSlot(dir, "default", "other"); err != nil || other != 0 {
		t.Errorf("another task queue's first slot: %d, %v; want 0", other, err)
	} else {
		release()
	}
	releaseA()
	if c, release, err := ClaimSlot(dir, "default", "temco"); err != nil || c != 0 {
		t.Errorf("after slot 0 was released: %d, %v; want 0", c, err)
	} else {
		release()
	}
}

// A process's lock is its own: another process cannot take a slot this one holds, and
// takes it once this one lets go.
func TestASlotIsHeldAcrossProcesses(t *testing.T) {
	if os.Getenv("TEMCO_SLOT_CHILD") != "" {
		slot, _, err := ClaimSlot(os.Getenv("TEMCO_SLOT_CHILD"), "default", "temco")
		if err != nil {
			os.Exit(2)
		}
		os.Exit(10 + slot)
	}
	dir := t.TempDir()
	_, release, err := ClaimSlot(dir, "default", "temco")
	if err != nil {
		t.Fatal(err)
	}
	child := func() int {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestASlotIsHeldAcrossProcesses$")
		cmd.Env = append(os.Environ(), "TEMCO_SLOT_CHILD="+dir)
		err := cmd.Run()
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode() - 10
		}
		t.Fatalf("child: %v", err)
		return -1
	}
	if got := child(); got != 1 {
		t.Errorf("another process took slot %d while 0 was held, want 1", got)
	}
	release()
	if got := child(); got != 0 {
		t.Errorf("another process took slot %s once 0 was free, want 0", strconv.Itoa(got))
	}
}
