package hpa

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// node is what placement needs of a cluster node: its labels and the capacity left
// (allocatable minus the requests of its pods), in the units requirements use.
type node struct {
	Name   string
	Labels map[string]string
	Free   map[string]int64
}

// demand is what one consumer's pods need: nodes carrying every label, and for each
// replica one such node with room for all the requests.
type demand struct {
	Who      string
	Replicas int64
	Labels   map[string]string
	Requests map[string]int64 // base units: cores, bytes, counts
}

// demandsOf turns an app's intents into demands. A consumer without requirements
// constrains nothing (EMCO would drop every cluster of the group instead).
func demandsOf(intents []intent) []demand {
	var out []demand
	for _, it := range intents {
		for _, c := range it.Consumers {
			if len(c.Requirements) == 0 {
				continue
			}
			d := demand{Who: c.where(it), Replicas: max(c.Spec.Replicas, 1), Labels: map[string]string{}, Requests: map[string]int64{}}
			for _, r := range c.Requirements {
				res := r.Spec.Resource
				if r.Spec.IsAllocatable() {
					d.Requests[res.Name] = amount(res.Name, res.Requests)
				} else {
					d.Labels[res.Key] = res.Value
				}
			}
			out = append(out, d)
		}
	}
	return out
}

// fit places every replica of every demand on the nodes, charging each replica to the
// matching node with the most room, and says why the first one that does not fit fails.
func fit(nodes []node, demands []demand) error {
	if len(nodes) == 0 && len(demands) > 0 {
		return fmt.Errorf("the cluster has no schedulable nodes")
	}
	free := make(map[string]map[string]int64, len(nodes))
	for _, n := range nodes {
		free[n.Name] = maps.Clone(n.Free)
	}
	for _, d := range demands {
		var matching []node
		for _, n := range nodes {
			if hasLabels(n, d.Labels) {
				matching = append(matching, n)
			}
		}
		if len(matching) == 0 {
			return fmt.Errorf("%s: no node has %s", d.Who, describeLabels(d.Labels))
		}
		if len(d.Requests) == 0 {
			continue
		}
		for replica := int64(1); replica <= d.Replicas; replica++ {
			best := roomiest(matching, free, d.Requests)
			if best == "" {
				return fmt.Errorf("%s: replica %d of %d needs %s, more than any node with its labels has free (%s)",
					d.Who, replica, d.Replicas, describeAmounts(d.Requests), describeFree(matching, free, d.Requests))
			}
			for r, v := range d.Requests {
				free[best][r] -= v
			}
		}
	}
	return nil
}

// roomiest returns the node that could still take the most such replicas ("" if none has
// room for one); ties go to the first by name.
func roomiest(nodes []node, free map[string]map[string]int64, req map[string]int64) string {
	best, bestRoom := "", 0.0
	for _, n := range nodes {
		room := -1.0
		for r, v := range req {
			f := free[n.Name][r]
			if f < v {
				room = -1
				break
			}
			if q := float64(f) / float64(v); room < 0 || q < room {
				room = q
			}
		}
		if room >= 1 && (best == "" || room > bestRoom || room == bestRoom && n.Name < best) {
			best, bestRoom = n.Name, room
		}
	}
	return best
}

func hasLabels(n node, want map[string]string) bool {
	for k, v := range want {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func describeLabels(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	if len(parts) == 1 {
		return "the label " + parts[0]
	}
	return "all of the labels " + strings.Join(parts, ", ")
}

func describeAmounts(a map[string]int64) string {
	parts := make([]string, 0, len(a))
	for _, r := range slices.Sorted(maps.Keys(a)) {
		parts = append(parts, r+" "+resource.NewQuantity(a[r], resource.DecimalSI).String())
	}
	return strings.Join(parts, ", ")
}

// describeFree lists what the first few nodes have left of the requested resources.
func describeFree(nodes []node, free map[string]map[string]int64, req map[string]int64) string {
	const shown = 5
	parts := make([]string, 0, shown+1)
	for i, n := range nodes {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more nodes", len(nodes)-shown))
			break
		}
		left := map[string]int64{}
		for r := range req {
			left[r] = free[n.Name][r]
		}
		parts = append(parts, n.Name+": "+describeAmounts(left))
	}
	return strings.Join(parts, "; ")
}
