package lifecycle

import (
	"encoding/json"
	"testing"
)

// An ObserveCapacity scheduled with a Target alone (the input before Seed) reads the same.
func TestCapacityObserveInputReadsATarget(t *testing.T) {
	dig := Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	b, _ := json.Marshal(dig)
	var in CapacityObserveInput
	if err := json.Unmarshal(b, &in); err != nil || in.Target != dig || in.Seed {
		t.Errorf("%+v (%v)", in, err)
	}
}
