package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/features/health/flow"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// BenchmarkClusterProbes (`make bench-probes CLUSTERS=N`): the ClusterHealth workflow's
// rounds over the N clusters of bench-scale, each probed with its own credentials: the
// first round (every cluster new to the store), a steady one (nothing changed: a read per
// page) and a steady one with pages of 500 clusters rather than 2,000, each with its time and the CPU of the worker, Temporal, the store (FerretDB
// and PostgreSQL) and the API servers answering /readyz. The api of a benchmark's stack
// starts no probes; the benchmark starts the workflow, one round an hour, and wakes it.
func BenchmarkClusterProbes(b *testing.B) {
	n := scaleN(100)
	scaleDeployment(b, fmt.Sprintf("scale%d", n), n)
	tc := dialTemporal(b)
	defer tc.Close()
	mc, err := mongo.Connect(options.Client().ApplyURI(stack.Mongo.URI()))
	if err != nil {
		b.Fatal(err)
	}
	defer mc.Disconnect(context.Background())
	health := mc.Database("temco").Collection("cluster_health")
	ctx := context.Background()

	groups := probeCPUGroups()
	for i, name := range []string{"first (every cluster new)", "steady (nothing changed)", "steady, pages of 500"} {
		before := groups.cpu()
		start := time.Now()
		in := flow.HealthInput{Interval: time.Hour}
		if i == 2 {
			in.PageSize = 500
		}
		if i == 0 {
			_, err = tc.ExecuteWorkflow(ctx, temporalclient.StartWorkflowOptions{ID: flow.ClusterHealthID, TaskQueue: "temco"},
				flow.WorkflowClusterHealth, in)
		} else {
			err = tc.SignalWorkflow(ctx, flow.ClusterHealthID, "", lifecycle.SignalWake, in)
		}
		if err != nil {
			b.Fatal(err)
		}
		states := awaitRound(b, health, start)
		took := time.Since(start)
		used := groups.cpu()
		var parts []string
		for g, name := range groups.names {
			parts = append(parts, fmt.Sprintf("%s %.1f", name, used[g]-before[g]))
		}
		fmt.Printf("probes: N=%d round %s: %s (%.0f clusters/s), clusters by state %v; CPU s: %s\n",
			n, name, took.Round(time.Millisecond), float64(n)/took.Seconds(), states, strings.Join(parts, ", "))
	}
	if err := tc.SignalWorkflow(ctx, flow.ClusterHealthID, "", lifecycle.SignalStop, nil); err != nil {
		b.Fatal(err)
	}
}

// awaitRound waits for the record of a round of probes that started at or after since,
// and returns its counts.
func awaitRound(b *testing.B, health *mongo.Collection, since time.Time) map[string]int {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var r struct {
			Started time.Time      `bson:"started"`
			States  map[string]int `bson:"states"`
		}
		err := health.FindOne(context.Background(), bson.D{{Key: "_id", Value: "~round"}}).Decode(&r)
		switch {
		case err == nil && !r.Started.Before(since.Add(-time.Second)):
			return r.States
		case err != nil && !errors.Is(err, mongo.ErrNoDocuments):
			b.Fatal(err)
		case time.Now().After(deadline):
			b.Fatalf("no round of probes recorded since %s within 30 minutes", since)
		}
		time.Sleep(200 * time.Millisecond) // a benchmark's poll of a minutes-long round
	}
}

// cpuGroups sums the CPU of the stack's processes by what they are.
type cpuGroups struct {
	names []string
	pids  [][]int
}

func probeCPUGroups() cpuGroups {
	g := cpuGroups{names: []string{"worker", "Temporal", "store", "API servers"}, pids: make([][]int, 4)}
	g.pids[0] = []int{stack.Worker.Cmd.Process.Pid}
	for _, w := range stack.MoreWorkers {
		g.pids[0] = append(g.pids[0], w.Cmd.Process.Pid)
	}
	g.pids[1] = []int{stack.Temporal.Proc().Cmd.Process.Pid}
	g.pids[2] = []int{stack.Mongo.Proc().Cmd.Process.Pid}
	if stack.Postgres != nil {
		g.pids[2] = append(g.pids[2], descendants(stack.Postgres.Proc().Cmd.Process.Pid)...)
	}
	for _, c := range stack.Clusters {
		for _, p := range c.Procs() {
			if strings.HasSuffix(p.Name, "kube-apiserver") {
				g.pids[3] = append(g.pids[3], p.Cmd.Process.Pid)
			}
		}
	}
	return g
}

// cpu is each group's CPU seconds so far (PostgreSQL's backends as they are now).
func (g cpuGroups) cpu() []float64 {
	out := make([]float64, len(g.pids))
	for i, pids := range g.pids {
		if i == 2 && stack.Postgres != nil {
			pids = append(pids[:1:1], descendants(stack.Postgres.Proc().Cmd.Process.Pid)...)
		}
		for _, pid := range pids {
			out[i] += cpuSeconds(pid)
		}
	}
	return out
}

// descendants is pid and every process below it.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids, _ := testenv.Children(out[i])
		out = append(out, kids...)
	}
	return out
}
