package cluster

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
)

// Objects are applied in groups, each after the one before: Namespaces, CRDs, what
// workloads use, then workloads (and deleted in the reverse order).
func TestWorkloadsAreAppliedAfterWhatTheyUse(t *testing.T) {
	kinds := []string{"Deployment", "ConfigMap", "Namespace", "Service", "CronJob", "CustomResourceDefinition", "Secret", "Widget", "StatefulSet"}
	objs := make([]appctx.Object, len(kinds))
	for i, k := range kinds {
		objs[i].Kind = k
	}
	var got [][]string
	for _, g := range applyGroups(objs) {
		var names []string
		for _, i := range g {
			names = append(names, kinds[i])
		}
		got = append(got, names)
	}
	want := "[[Namespace] [CustomResourceDefinition] [ConfigMap Service Secret Widget] [Deployment CronJob StatefulSet]]"
	if fmt.Sprint(got) != want {
		t.Errorf("groups %v, want %s", got, want)
	}
}

// An app's workloads wait for the configuration of every app being applied beside it.
func TestWorkloadsWaitForEveryAppsConfiguration(t *testing.T) {
	var b configBarrier
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	b.enter() // app a
	b.enter() // app b
	var wg sync.WaitGroup
	wg.Go(func() { // a is done with its configuration first
		b.leave()
		b.wait()
		note("a workloads")
	})
	wg.Go(func() {
		note("b configuration")
		b.leave()
		b.wait()
		note("b workloads")
	})
	wg.Wait()
	if i := slices.Index(order, "b configuration"); i != 0 {
		t.Fatalf("order %v: a's workloads went before b's configuration was in", order)
	}
	b.wait() // nobody configuring: returns at once
}
