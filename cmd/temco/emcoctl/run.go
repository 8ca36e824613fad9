package emcoctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/temco/temco/client"
)

// Runner sends documents to temco's API, printing one line per document.
type Runner struct {
	API      string        // base URL, e.g. http://127.0.0.1:9015 (requests go below /v2)
	Token    string        // bearer token, when the API requires authentication
	Out      io.Writer     // the lines, and what get reads
	Stop     bool          // stop at the first document that fails (emcoctl's -s)
	WaitTime time.Duration // after a 202, pause this long before the next document (emcoctl's -w)
	Wait     bool          // apply: await a DIG's instantiate, update, rollback and terminate too
	Timeout  time.Duration // longest await of one operation
	HTTP     *http.Client  // nil: http.DefaultClient

	pause func(time.Duration) // time.Sleep; tests record the pauses instead
}

// pollEvery is how often an awaited operation's status is read.
const pollEvery = 250 * time.Millisecond

// Apply POSTs every document to its anchor, in order.
func (r *Runner) Apply(ctx context.Context, docs []*Document) error {
	return r.run(ctx, planApply(docs, r.Wait))
}

// Update PUTs every resource to its own path, in order, skipping actions.
func (r *Runner) Update(ctx context.Context, docs []*Document) error {
	return r.plan(ctx, planUpdate, docs)
}

// Delete removes the resources in reverse order, terminating what was instantiated.
func (r *Runner) Delete(ctx context.Context, docs []*Document) error {
	return r.plan(ctx, planDelete, docs)
}

// Get prints every resource (and status) the documents name.
func (r *Runner) Get(ctx context.Context, docs []*Document) error {
	return r.plan(ctx, planGet, docs)
}

func (r *Runner) plan(ctx context.Context, plan func([]*Document) ([]step, error), docs []*Document) error {
	steps, err := plan(docs)
	if err != nil {
		return err
	}
	return r.run(ctx, steps)
}

// run executes the steps in order. A refusal by the API fails the document and the run
// goes on unless Stop is set; no answer at all (an unreachable API, an unreadable file)
// always stops it, as in emcoctl.
func (r *Runner) run(ctx context.Context, steps []step) error {
	failed, paused := 0, false
	for _, s := range steps {
		head := fmt.Sprintf("%d %s:", s.doc.index, s.doc.anchor)
		if s.skip != "" {
			fmt.Fprintf(r.Out, "%s skipped (%s)\n", head, s.skip)
			continue
		}
		if paused {
			r.sleep(r.WaitTime)
		}
		a, err := r.execute(ctx, s)
		if err != nil {
			fmt.Fprintf(r.Out, "%s %s %s error: %v\n", head, s.method, shown(s.path), err)
			return fmt.Errorf("stopped at document %d (%s): %w", s.doc.index, s.doc.anchor, err)
		}
		line := fmt.Sprintf("%s %s %s %d", head, s.method, shown(s.path), a.status)
		if a.message != "" {
			line += " " + a.message
		}
		fmt.Fprintln(r.Out, line)
		if s.method == http.MethodGet && a.ok() && len(a.body) > 0 {
			fmt.Fprintf(r.Out, "%s\n", a.body)
		}
		if a.failed() {
			failed++
			if r.Stop {
				return fmt.Errorf("stopped at document %d (%s), which failed", s.doc.index, s.doc.anchor)
			}
		}
		paused = a.status == http.StatusAccepted && r.WaitTime > 0
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d documents failed", failed, len(steps))
	}
	return nil
}

// shown is how a path appears in the output: as the API sees it.
func shown(p string) string { return "/v2/" + strings.TrimPrefix(p, "/") }

func (r *Runner) sleep(d time.Duration) {
	if r.pause != nil {
		r.pause(d)
		return
	}
	time.Sleep(d)
}

// execute sends a step's request and, when it is to be awaited, waits for the outcome;
// an operation that ends badly keeps its 2xx status with the failure as message.
func (r *Runner) execute(ctx context.Context, s step) (answer, error) {
	req, err := request(s)
	if err != nil {
		return answer{}, err
	}
	a, err := r.send(ctx, req)
	if err != nil || !a.ok() || s.await == "" {
		return a, err
	}
	a.message, err = r.await(ctx, s.await, s.want)
	return a, err
}

// await polls target's status until it is one of want, and returns why it failed ("" when
// it reached want[0]); an error means the API could not be asked.
func (r *Runner) await(ctx context.Context, target string, want []string) (string, error) {
	deadline := time.Now().Add(r.Timeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		a, err := r.send(ctx, client.Request{Method: http.MethodGet, Path: target + client.StatusQuery})
		if err != nil {
			return "", err
		}
		var s client.Status // deployedStatus is the same for DIGs and logical clouds
		if a.ok() && json.Unmarshal(a.body, &s) == nil {
			for i, w := range want {
				switch {
				case s.DeployedStatus != w:
				case i == 0:
					return "", nil
				default:
					return fmt.Sprintf("%s ended %s: %s", target, w, s.Error), nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("%s did not reach %s within %s (status %q)", target, want[0], r.Timeout, s.DeployedStatus), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}
