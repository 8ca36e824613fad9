package cluster

import (
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
)

// objectConcurrency bounds the requests one cluster activity has in flight.
const objectConcurrency = 16

// applyGroups splits an app's objects (indices, in apply order) into what must exist
// before the rest: Namespaces, then CRDs, then what workloads use (ConfigMaps, Secrets,
// Services, RBAC, ...), then the workloads. Each group is applied concurrently; a
// workload's Pods thus never start before their configuration exists, as with Helm.
func applyGroups(objs []appctx.Object) [][]int {
	var ns, crds, config, work []int
	for i, o := range objs {
		switch {
		case o.Kind == "Namespace":
			ns = append(ns, i)
		case o.Kind == "CustomResourceDefinition":
			crds = append(crds, i)
		case workloads[o.Kind]:
			work = append(work, i)
		default:
			config = append(config, i)
		}
	}
	var out [][]int
	for _, g := range [][]int{ns, crds, config, work} {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// configBarrier holds a cluster's workloads back while any app applied there at the same
// time still applies what workloads use, as Helm installs all the kinds of a release,
// subcharts included, in one order: Pods start once every app's configuration is in, and
// the Deployments' cascade (ReplicaSets, Pods, scheduling) does not compete with the
// applies still in flight. An app waiting for a dependency holds nobody back.
type configBarrier struct {
	mu          sync.Mutex
	cond        *sync.Cond
	configuring int // apps applying what comes before their workloads
}

func (b *configBarrier) enter() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.configuring++
}

func (b *configBarrier) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.configuring--; b.configuring == 0 && b.cond != nil {
		b.cond.Broadcast()
	}
}

// wait returns once no app is configuring. Every app that entered leaves: when it
// reaches its workloads, or when it returns (done or failed).
func (b *configBarrier) wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cond == nil {
		b.cond = sync.NewCond(&b.mu)
	}
	for b.configuring > 0 {
		b.cond.Wait()
	}
}

// workloads are the kinds that run Pods.
var workloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true,
	"ReplicationController": true, "Job": true, "CronJob": true, "Pod": true}

// forEach runs fn for every index, objectConcurrency at a time, and returns the first
// error once all are done.
func forEach(idx []int, fn func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(objectConcurrency)
	for _, i := range idx {
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}

// inOrder runs one function per app concurrently, each starting once the apps it must
// follow are done. after(app) names those apps (only ones in apps count). An app whose
// predecessor failed does not run. It returns the first error.
func inOrder(apps []string, after func(app string) []string, run func(app string) error) error {
	done := make(map[string]chan struct{}, len(apps))
	for _, a := range apps {
		done[a] = make(chan struct{})
	}
	var mu sync.Mutex
	failed := map[string]bool{}
	hasFailed := func(a string) bool { mu.Lock(); defer mu.Unlock(); return failed[a] }
	fail := func(a string) { mu.Lock(); defer mu.Unlock(); failed[a] = true }
	var g errgroup.Group
	for _, a := range apps {
		g.Go(func() error {
			defer close(done[a])
			for _, prev := range after(a) {
				if ch, ok := done[prev]; ok {
					<-ch
					if hasFailed(prev) {
						fail(a)
						return nil
					}
				}
			}
			if err := run(a); err != nil {
				fail(a)
				return err
			}
			return nil
		})
	}
	return g.Wait()
}
