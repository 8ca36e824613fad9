package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// cloudActor drives standard (level 1) logical clouds of its project through create,
// instantiate, terminate and delete: each instantiated cloud has its namespace on its
// clusters, a terminated or deleted one none.
type cloudActor struct {
	r       *run
	c       *client
	rnd     *rand.Rand
	project string
	n       int             // clouds made so far
	live    map[string]bool // cloud name → exists
	// workflowOps counts each cloud's accepted operations.
	workflowOps map[string]int
	unresolved  map[string]int // operations the end of the chaos phase left unknown
	// removing: clouds whose delete was refused half-way (an operation started late).
	removing map[string]bool
}

func (l *cloudActor) path(name string) string {
	return "/projects/" + l.project + "/logical-clouds/" + name
}

// Namespace is the namespace of cloud name on the clusters.
func (l *cloudActor) namespace(name string) string { return l.project + "-" + name }

type cloudStatus struct {
	States struct {
		Actions []struct {
			State string `json:"state"`
		} `json:"actions"`
	} `json:"states"`
	DeployedStatus string `json:"deployedStatus"`
	Error          string `json:"error"`
}

func (s cloudStatus) state() string {
	if n := len(s.States.Actions); n > 0 {
		return s.States.Actions[n-1].State
	}
	return "Created"
}

func (s cloudStatus) running() bool { return strings.HasSuffix(s.DeployedStatus, "ing") }

func (l *cloudActor) status(ctx context.Context, name string) (cloudStatus, bool, error) {
	var s cloudStatus
	found, err := l.c.read(ctx, l.path(name)+"/status?status=deployed&output=summary", &s)
	return s, found, err
}

// make creates a new cloud over the first two clusters.
func (l *cloudActor) make(ctx context.Context) error {
	l.n++
	name := "lc" + strconv.Itoa(l.n)
	d := &digActor{r: l.r, c: l.c}
	if err := d.create(ctx, l.path(name), func() answer {
		return l.c.do("POST", "/projects/"+l.project+"/logical-clouds", res(name, map[string]any{"namespace": l.namespace(name),
			"level": "1", "user": map[string]any{"userName": name + "-user", "type": "certificate"}}))
	}); err != nil {
		return err
	}
	l.live[name] = true
	for _, cl := range l.r.clusters[:2] {
		ref := l.path(name) + "/cluster-references/" + cl
		if err := d.create(ctx, ref, func() answer {
			return l.c.do("POST", l.path(name)+"/cluster-references", res(cl, map[string]any{"clusterProvider": provider, "cluster": cl}))
		}); err != nil {
			return err
		}
	}
	return nil
}

// operate asks for op on cloud name and waits for its end.
func (l *cloudActor) operate(ctx context.Context, name, op string) error {
	before, _, err := l.status(ctx, name)
	if err != nil {
		return err
	}
	sent := time.Now()
	a := l.c.do("POST", l.path(name)+"/"+op, nil)
	for a.busy() && ctx.Err() == nil {
		l.r.pause(ctx)
		a = l.c.do("POST", l.path(name)+"/"+op, nil)
	}
	l.trace(name, "%s from %s: %s", op, before.state(), a)
	if !a.ok() && !a.lost() {
		l.r.count("refused cloud " + op)
		return nil
	}
	if a.ok() {
		l.workflowOps[name]++
	}
	for ctx.Err() == nil {
		s, _, err := l.status(ctx, name)
		if err != nil {
			if !a.ok() {
				l.unresolved[name]++
			}
			return err
		}
		if !a.ok() && len(s.States.Actions) == len(before.States.Actions) && !s.running() {
			late, err := l.r.startedLate(ctx, "logical-cloud/"+l.project+"/"+name+"/"+op+"/", sent)
			l.trace(name, "%s lost; started late: %v (%v)", op, late, err)
			if err != nil || !late {
				if err != nil {
					l.unresolved[name]++
				}
				return err // a lost request that started nothing
			}
			for len(s.States.Actions) == len(before.States.Actions) && !s.running() { // it has yet to record itself
				l.r.pause(ctx)
				if s, _, err = l.status(ctx, name); err != nil {
					return err
				}
			}
		}
		if !s.running() {
			l.trace(name, "%s ended: %s %s", op, s.state(), s.DeployedStatus)
			if !a.ok() {
				l.workflowOps[name]++ // a lost request that started it
			}
			if a.code >= 500 {
				l.r.violation("a %d to %s of cloud %s started it: %s", a.code, op, name, a)
			}
			if strings.HasSuffix(s.DeployedStatus, "Failed") {
				l.r.violation("%s of logical cloud %s failed: %s", op, name, s.Error)
			}
			l.r.count("cloud " + op)
			return nil
		}
		l.r.pause(ctx)
	}
	return ctx.Err()
}

// remove deletes cloud name: its references, then itself.
func (l *cloudActor) remove(ctx context.Context, name string) error {
	for _, p := range []string{l.path(name) + "/cluster-references/" + l.r.clusters[0], l.path(name) + "/cluster-references/" + l.r.clusters[1], l.path(name)} {
		for ctx.Err() == nil {
			a := l.c.do("DELETE", p, nil)
			l.trace(name, "DELETE %s: %s", p, a)
			if a.ok() || a.code == http.StatusNotFound {
				break
			}
			if a.code == http.StatusConflict && !a.busy() { // a late operation changed its state
				l.r.count("refused cloud delete")
				l.removing[name] = true
				return nil
			}
			if !a.lost() && !a.busy() {
				return fmt.Errorf("DELETE %s: %s", p, a)
			}
			l.r.pause(ctx)
		}
	}
	delete(l.live, name)
	delete(l.removing, name)
	l.r.count("cloud delete")
	return ctx.Err()
}

// trace prints what happened to cloud name: the clouds' operations are few, and a finding
// about one needs its story.
func (l *cloudActor) trace(name, format string, args ...any) {
	fmt.Printf("chaos: %s cloud %s: %s\n", time.Now().Format("15:04:05.000"), name, fmt.Sprintf(format, args...))
}

// step moves one random cloud on, or makes a new one.
func (l *cloudActor) step(ctx context.Context) error {
	if len(l.live) == 0 || l.rnd.IntN(4) == 0 && len(l.live) < 3 {
		return l.make(ctx)
	}
	names := make([]string, 0, len(l.live))
	for n := range l.live {
		names = append(names, n)
	}
	name := names[l.rnd.IntN(len(names))]
	s, found, err := l.status(ctx, name)
	if err != nil {
		return err
	}
	if !found {
		l.r.violation("logical cloud %s is gone", name)
		delete(l.live, name)
		return nil
	}
	switch st := s.state(); {
	case s.running():
		return l.settle(ctx, name)
	case l.removing[name] && st == "Terminated", l.removing[name] && st == "Created":
		return l.remove(ctx, name)
	case l.removing[name]:
		return l.operate(ctx, name, "terminate")
	case st == "Created":
		return l.operate(ctx, name, "instantiate")
	case st == "Terminated":
		if l.rnd.IntN(2) == 0 {
			return l.operate(ctx, name, "instantiate")
		}
		return l.remove(ctx, name)
	default: // instantiated, or stopped
		return l.operate(ctx, name, "terminate")
	}
}

// settle waits for cloud name's operation to end, and terminates a stopped or failed one.
func (l *cloudActor) settle(ctx context.Context, name string) error {
	for ctx.Err() == nil {
		s, found, err := l.status(ctx, name)
		if err != nil || !found {
			return err
		}
		switch {
		case s.running():
			l.r.pause(ctx)
		case strings.HasSuffix(s.state(), "Stopped") || strings.HasSuffix(s.DeployedStatus, "Failed"):
			if err := l.operate(ctx, name, "terminate"); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return fmt.Errorf("logical cloud %s: its operation did not end", name)
}

// wantNamespaces are the namespaces the clouds should have on the clusters now.
func (l *cloudActor) wantNamespaces(ctx context.Context) (map[string]bool, error) {
	want := map[string]bool{}
	for name := range l.live {
		s, _, err := l.status(ctx, name)
		if err != nil {
			return nil, err
		}
		if s.state() == "Instantiated" {
			want[l.namespace(name)] = true
		}
	}
	return want, nil
}
