package deps

import "testing"

func TestSharedBuildsOncePerDeps(t *testing.T) {
	var d Deps
	built := 0
	build := func() *int { built++; return new(int) }
	if a, b := Shared(&d, build), Shared(&d, build); a != b || built != 1 {
		t.Errorf("two calls built %d values (same: %v)", built, a == b)
	}
	if Shared(&Deps{}, build) == Shared(&d, build) {
		t.Error("two Deps share a value")
	}
}
