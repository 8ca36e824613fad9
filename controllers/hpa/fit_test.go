package hpa

import (
	"testing"
)

func TestFit(t *testing.T) {
	big := node{Name: "n1", Labels: map[string]string{"qat": "true"}, Free: map[string]int64{"cpu": 8, "memory": 16e9}}
	small := node{Name: "n2", Labels: map[string]string{"qat": "false"}, Free: map[string]int64{"cpu": 2, "memory": 4e9}}
	cases := []struct {
		name    string
		nodes   []node
		demands []demand
		want    string
	}{
		{"label on one node", []node{big, small}, []demand{{Who: "c", Replicas: 1, Labels: map[string]string{"qat": "true"}}}, ""},
		{"label on no node", []node{small}, []demand{{Who: "c", Replicas: 1, Labels: map[string]string{"qat": "true"}}}, "c: no node has the label qat=true"},
		{"labels intersect on a node", []node{big, small},
			[]demand{{Who: "c", Replicas: 1, Labels: map[string]string{"qat": "true", "zone": "a"}}}, "no node has all of the labels qat=true, zone=a"},
		{"replicas spread over nodes", []node{big, small}, []demand{{Who: "c", Replicas: 5, Requests: map[string]int64{"cpu": 2}}}, ""},
		{"one replica too many", []node{big, small}, []demand{{Who: "c", Replicas: 6, Requests: map[string]int64{"cpu": 2}}},
			"c: replica 6 of 6 needs cpu 2, more than any node with its labels has free (n1: cpu 0; n2: cpu 0)"},
		{"capacity only on labelled nodes", []node{big, small},
			[]demand{{Who: "c", Replicas: 5, Labels: map[string]string{"qat": "true"}, Requests: map[string]int64{"cpu": 2}}}, "replica 5 of 5"},
		{"every request on the same node", []node{
			{Name: "cpu-rich", Free: map[string]int64{"cpu": 8, "memory": 1e9}},
			{Name: "mem-rich", Free: map[string]int64{"cpu": 1, "memory": 8e9}}},
			[]demand{{Who: "c", Replicas: 1, Requests: map[string]int64{"cpu": 2, "memory": 2e9}}}, "needs cpu 2, memory 2G"},
		{"consumers share the capacity", []node{small}, []demand{
			{Who: "a", Replicas: 1, Requests: map[string]int64{"cpu": 2}},
			{Who: "b", Replicas: 1, Requests: map[string]int64{"cpu": 1}}}, "b: replica 1 of 1 needs cpu 1"},
		{"resource the nodes lack", []node{big}, []demand{{Who: "c", Replicas: 1, Requests: map[string]int64{"nvidia.com/gpu": 1}}}, "needs nvidia.com/gpu 1"},
		{"no nodes", nil, []demand{{Who: "c", Replicas: 1}}, "no schedulable nodes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectErr(t, fit(c.nodes, c.demands), c.want) })
	}
}

// Each replica goes to the node with the most room, as in EMCO, and the charge sticks: a
// later consumer sees it. This greedy choice can miss a packing that would fit (here: the
// 1-core pod on a, the 5-core pod on b).
func TestFitChargesTheRoomiestNode(t *testing.T) {
	nodes := []node{{Name: "a", Free: map[string]int64{"cpu": 4}}, {Name: "b", Free: map[string]int64{"cpu": 5}}}
	small := demand{Who: "small", Replicas: 1, Requests: map[string]int64{"cpu": 1}}
	large := demand{Who: "large", Replicas: 1, Requests: map[string]int64{"cpu": 5}}
	expectErr(t, fit(nodes, []demand{large, small}), "")
	expectErr(t, fit(nodes, []demand{small, large}), "large: replica 1 of 1 needs cpu 5, more than any node with its labels has free (a: cpu 4; b: cpu 4)")
	if nodes[0].Free["cpu"] != 4 || nodes[1].Free["cpu"] != 5 {
		t.Fatalf("fit changed the nodes it was given: %+v", nodes)
	}
}

func TestRoomiestPrefersMostReplicasLeftThenName(t *testing.T) {
	free := map[string]map[string]int64{
		"a": {"cpu": 4, "memory": 1e9}, // room for 1 replica by memory
		"b": {"cpu": 2, "memory": 4e9}, // room for 2 by cpu
		"c": {"cpu": 2, "memory": 4e9},
	}
	nodes := []node{{Name: "c"}, {Name: "a"}, {Name: "b"}}
	if got := roomiest(nodes, free, map[string]int64{"cpu": 1, "memory": 1e9}); got != "b" {
		t.Fatalf("roomiest = %q, want b", got)
	}
	if got := roomiest(nodes, free, map[string]int64{"cpu": 5}); got != "" {
		t.Fatalf("roomiest = %q, want none", got)
	}
}

func TestDemandsOf(t *testing.T) {
	it := intent{Name: "i", App: "web", Consumers: []consumer{
		{Name: "empty", Spec: ConsumerSpec{Name: "web", Replicas: 3}},
		{Name: "c", Spec: ConsumerSpec{Name: "web", Container: "app"}, Requirements: []requirement{
			{Name: "mem", Spec: alloc("memory", 512, 0)}, {Name: "qat", Spec: label("qat", "true")}}},
	}}
	got := demandsOf([]intent{it})
	if len(got) != 1 {
		t.Fatalf("demands = %+v, want one (a consumer without requirements constrains nothing)", got)
	}
	d := got[0]
	if d.Replicas != 1 || d.Requests["memory"] != 512e6 || d.Labels["qat"] != "true" || d.Who != `hpa consumer "c" of intent "i"` {
		t.Fatalf("demand = %+v", d)
	}
}
