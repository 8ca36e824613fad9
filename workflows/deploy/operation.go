package deploy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
	"github.com/temco/temco/workflows/localfirst"
)

// operation is the state of one Instantiate or Terminate run.
type operation struct {
	in       lifecycle.OpInput
	progress lifecycle.Progress
	stopped  bool
	stop     workflow.CancelFunc // cancels the operation's work when a stop arrives
	// superseded is the previous context once an update removed what only it had.
	superseded string
	retrying   retryList
	// pinImages: the DIG pins its images once the context's objects are final.
	pinImages bool
	// readCapabilities is how many apps' charts read .Capabilities (releaseRendersRead).
	readCapabilities int
	// later are the workflows controllers asked to run after the apply (or deletion).
	later []askedBy
	// rollout is the operation's staged rollout (nil without a rollout strategy);
	// rolledBack says it returned the clusters it had changed.
	rollout    *rolloutRun
	rolledBack bool
	// hold, when set, holds the next batches of the fan-outs started meanwhile (a
	// rollout stage's apply).
	hold *batchHold
	// refused: the operation failed before it touched any cluster.
	refused bool
	gates
}

// changeRelease is the one version gate of the workflows here since 2026-11-23. Every
// GetVersion in a new run records a marker and upserts the TemporalChangeVersion search
// attribute, so a gate per change cost a run one of each per change; one gate, recorded
// as the run starts, covers a whole release. Version 1 covers every change gated on its
// own before it: has consults their own gates only when replaying older runs. A later
// release raises releaseLatest and tests release for its changes.
const changeRelease = "release"

// The releases of changeRelease.
const (
	// releaseGate (2026-11-23): one gate per run; finish is a local activity.
	releaseGate workflow.Version = 1
	// releaseLocalFirst (2026-11-23): finish tries locally a few times, then as a regular
	// activity (localfirst).
	releaseLocalFirst workflow.Version = 2

	// releaseHooks (2026-11-24): controllers' terminate hooks before a terminate deletes
	// anything, and their finished hooks after an instantiate, update or terminate.
	releaseHooks workflow.Version = 3
	// releaseWorkflows (2026-11-24): workflows controllers ask for (tac's hooks) run as
	// children of the operation.
	releaseWorkflows workflow.Version = 4
	// releaseStages (2026-11-24): a rollout stage checks its window after its before
	// tasks, and a pause or a closed window holds a started stage's next batches, its
	// progress deadline stopped meanwhile.
	releaseStages workflow.Version = 5
	// releaseVariants (2026-11-27): charts that read .Capabilities are rendered again for
	// the capabilities of the clusters they go to (RenderVariants), once prepared.
	releaseVariants workflow.Version = 6
	// releaseGroups (2026-11-27): a batch's clusters are worked on by group activities
	// (GroupSize clusters each, recorded as a side effect) rather than one each.
	releaseGroups workflow.Version = 7
	// releaseArtifacts (2026-11-28): the charts apps name by reference are pinned and
	// fetched (workflows/artifact) before rendering, placement beside them.
	releaseArtifacts workflow.Version = 8
	// releaseRendersRead (2026-12-06): RenderApps answers how many apps' charts read
	// .Capabilities, and RenderVariants runs only when some do (a round trip less).
	releaseRendersRead workflow.Version = 9
	// releaseAgents (2026-12-06): a cluster whose apply or delete was given to its agent
	// (ClusterResult.Awaiting) is done when AwaitAgent, completed by the agent's report,
	// ends (docs/agent.md).
	releaseAgents workflow.Version = 10
	// releaseGroupLists (2026-12-07): a batch workflow's group activity lists the batch
	// and counts it (GroupInput.Batch) instead of ListBatch before it and CountBatch after
	// it, when the kind's group can (BatchKind.GroupLists).
	releaseGroupLists workflow.Version = 11
	// releaseGateApplied (2026-12-08): a rollout's gates (not its bakes) take an applied
	// object whose readiness is its existence as Ready without reading it (BatchInput.Gate).
	releaseGateApplied workflow.Version = 12
	// releaseInlineBatches (2026-12-08): a fan-out of up to inlineBatches batches runs
	// them in the workflow itself, as it ran a single batch, not as child workflows.
	releaseInlineBatches workflow.Version = 13

	releaseLatest = releaseInlineBatches
)

// gates are a run's answers to version gates.
type gates struct{ release workflow.Version }

func newGates(ctx workflow.Context) gates {
	return gates{release: workflow.GetVersion(ctx, changeRelease, workflow.DefaultVersion, releaseLatest)}
}

// has reports whether this run makes change, which was gated on its own before the
// release gate.
func (g gates) has(ctx workflow.Context, change string) bool {
	return g.release >= releaseGate || workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == 1
}

// setup registers the progress query and the stop signal, and returns the context the
// operation's work runs in: a stop cancels it (activities waiting for a retry end at
// once), while the caller's context stays usable for recording the outcome.
func (o *operation) setup(ctx workflow.Context, op string) (workflow.Context, error) {
	o.gates = newGates(ctx)
	work, cancel := workflow.WithCancel(ctx)
	o.stop = cancel
	o.progress = lifecycle.Progress{Op: op, ContextID: o.in.ContextID, Phase: "starting"}
	o.retrying = retryList{}
	if err := workflow.SetQueryHandler(ctx, lifecycle.QueryProgress, func() (lifecycle.Progress, error) {
		p := o.progress
		p.Retrying = o.retrying.sorted()
		p.Hooks = slices.Clone(p.Hooks)
		if o.rollout != nil {
			status := o.rollout.snapshot()
			p.Rollout = &status
		}
		return p, nil
	}); err != nil {
		return nil, err
	}
	onRetryReports(ctx, func(_ workflow.Context, r lifecycle.ClusterRetry) { o.retrying.note(r) })
	if err := o.takeRolloutCommands(ctx); err != nil {
		return nil, err
	}
	stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
	workflow.Go(ctx, func(ctx workflow.Context) {
		stop.Receive(ctx, nil)
		o.stopped, o.progress.Stopped = true, true
		o.stop()
	})
	return work, nil
}

// finish records the final status; it runs on a disconnected context so that it also
// happens when the operation itself was cancelled.
func (o *operation) finish(ctx workflow.Context, status string, errMsg string) error {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	in := lifecycle.FinishInput{
		Target: o.in.Target, ContextID: o.in.ContextID, Status: status, Stopped: o.stopped, Error: errMsg, Superseded: o.superseded,
		Hooks: o.progress.Hooks, Refused: o.refused && !o.stopped,
	}
	if o.rollout != nil {
		status := o.rollout.snapshot()
		in.Rollout = &status
		if o.rolledBack && o.in.Previous != "" {
			in.Restored = o.in.Previous
		}
	}
	if o.release >= releaseLocalFirst {
		return localfirst.Execute(dctx, time.Minute, retryForever, lifecycle.FinishOperation, in, nil)
	}
	if o.has(dctx, changeLocalFinish) {
		return lifecycle.FinishOperation.ExecuteLocal(recording(dctx), in).Get(dctx, nil)
	}
	return lifecycle.FinishOperation.Execute(bookkeeping(dctx), in).Get(dctx, nil)
}

// changeLocalFinish marks operations that record their end as a local activity.
const changeLocalFinish = "local-finish"

// outcome names the context statuses an operation ends in, and what to say when it was
// cancelled (terminate cancels a running instantiate or update).
type outcome struct {
	done, failed, stopped, cancelled string
}

// conclude records how the operation's work (err) ended and returns the workflow's result.
func (o *operation) conclude(ctx workflow.Context, err error, out outcome) error {
	log := workflow.GetLogger(ctx) // carries the workflow id; silent during replay
	ended := func(status string, kv ...any) {
		log.Info("operation ended", append([]any{"op", o.progress.Op, "context", o.in.ContextID, "status", status,
			"clusters", o.progress.ClustersTotal, "resourcesFailed", o.progress.ResourcesFailed}, kv...)...)
	}
	switch {
	case ctx.Err() != nil: // cancelled from outside
		o.refused = false // a terminate follows: it records the state
		ended(out.failed, "error", out.cancelled)
		recordEnded(ctx, o.in.Target, o.progress.Op, lifecycle.OutcomeCancelled)
		_ = o.finish(ctx, out.failed, out.cancelled)
		return temporal.NewCanceledError()
	case o.stopped:
		ended(out.stopped)
		recordEnded(ctx, o.in.Target, o.progress.Op, lifecycle.OutcomeStopped)
		return o.finish(ctx, out.stopped, "stopped")
	case err != nil:
		ended(out.failed, "error", lifecycle.ErrorMessage(err))
		recordEnded(ctx, o.in.Target, o.progress.Op, lifecycle.OutcomeFailed)
		if ferr := o.finish(ctx, out.failed, lifecycle.ErrorMessage(err)); ferr != nil {
			return ferr
		}
		return err
	}
	ended(out.done)
	recordEnded(ctx, o.in.Target, o.progress.Op, lifecycle.OutcomeSucceeded)
	return o.finish(ctx, out.done, "")
}

// fanOut runs the batches of a context (fan.run). A stop cancels what is in flight and
// starts nothing new.
func (o *operation) fanOut(ctx workflow.Context, f fan) (lifecycle.BatchResult, error) {
	o.progress.BatchesTotal += f.batches
	f.in.Activity = o.perCluster(f.kind.Workflow.Name()).Name()
	f.gates = o.gates
	f.settled = func(_ workflow.Context, cluster string) { delete(o.retrying, cluster) }
	f.hold = o.hold
	return f.run(ctx, o.add)
}

// batchHold holds a fan-out's next batches: held says whether they wait, and wait
// returns once they may go on.
type batchHold struct {
	held func() bool
	wait func(workflow.Context) error
}

// BatchKind is a kind of batch the engine here runs (runBatch, fan): its child workflow,
// and the activities and options it runs. The operations' kinds are the table below; a
// workflow of another package with batches of its own declares its kind beside its batch
// workflow, whose body is RunBatch, and fans out with FanOut.
type BatchKind struct {
	// Workflow is the batch's child workflow.
	Workflow lifecycle.Workflow[lifecycle.BatchInput, lifecycle.BatchResult]
	// List lists a batch's clusters.
	List lifecycle.Activity[lifecycle.BatchInput, []string]
	// PerCluster is the activity run on each cluster of a batch; a target kind's own
	// (BatchInput.Activity) replaces it.
	PerCluster lifecycle.Activity[lifecycle.ClusterInput, lifecycle.ClusterResult]
	// Group is PerCluster on a group of clusters (the zero Activity: the kind has none,
	// one activity per cluster).
	Group   lifecycle.Activity[lifecycle.GroupInput, lifecycle.GroupResult]
	Options func(workflow.Context) workflow.Context // of the PerCluster (and Group) activity
	// KeepsCounts: the batches change no status, so their status counts, which List
	// leaves alone, are not counted again (CountBatch) when a listed batch ends.
	KeepsCounts bool
	// GroupLists: List is ListBatch, and the Group activity can list a batch and count it
	// itself (GroupInput.Batch).
	GroupLists bool
}

// The operations' batch kinds: a batch is listed with ListBatch, which drops its status
// counts, and a listed batch counts them again at its end.
var (
	applyBatch = BatchKind{Workflow: lifecycle.ChildApplyBatch, List: lifecycle.ListBatch,
		PerCluster: lifecycle.ApplyCluster, Group: lifecycle.ApplyGroup, Options: onCluster, GroupLists: true}
	deleteBatch = BatchKind{Workflow: lifecycle.ChildDeleteBatch, List: lifecycle.ListBatch,
		PerCluster: lifecycle.DeleteCluster, Group: lifecycle.DeleteGroup, Options: onCluster, GroupLists: true}
	pruneBatch = BatchKind{Workflow: lifecycle.ChildPruneBatch, List: lifecycle.ListBatch,
		PerCluster: lifecycle.PruneCluster, Group: lifecycle.PruneGroup, Options: onCluster, GroupLists: true}
	readBatch = BatchKind{Workflow: lifecycle.ChildReadBatch, List: lifecycle.ListBatch,
		PerCluster: lifecycle.ReadCluster, Group: lifecycle.ReadGroup, Options: reading, GroupLists: true}
)

// FanOut runs batches of kind over a context's batches (in, Batch set per batch) for a
// workflow that is no operation: inline when there are few, else as kind.Workflow children
// (ids: the calling workflow's, then "/prefix-N"), BatchWindow at a time; the counts are
// summed. It asks the release gate first, as every workflow of the engine does.
func FanOut(ctx workflow.Context, kind BatchKind, in lifecycle.BatchInput, batches int, prefix string) (lifecycle.BatchResult, error) {
	f := fan{kind: kind, in: in, batches: batches, prefix: prefix, gates: newGates(ctx)}
	return f.run(ctx, sum)
}

// fan is one fan-out over the batches of a context.
type fan struct {
	kind    BatchKind            // applyBatch, deleteBatch, pruneBatch, readBatch or another workflow's (FanOut)
	in      lifecycle.BatchInput // what every batch gets (Batch is set per batch)
	batches int
	first   []string                       // the clusters of a single batch, when the plan carried them
	prefix  string                         // of the batch workflow ids, unique within the operation ("batch" if empty)
	offset  int                            // the first batch's index (a rollout stage's batches)
	window  int                            // batch workflows at once (0: BatchWindow)
	settled func(workflow.Context, string) // a cluster of an inline batch is done
	gates   gates                          // of the run an inline batch runs in
	hold    *batchHold                     // nil: nothing holds the batches
}

// run runs the batches in a sliding window of BatchWindow: inline when there are at most
// inlineBatches (before release 13, just one), otherwise as child workflows; each result
// goes to add. Once ctx is cancelled (a stop) nothing new starts and what runs is
// cancelled.
func (f fan) run(ctx workflow.Context, add func(*lifecycle.BatchResult, lifecycle.BatchResult)) (lifecycle.BatchResult, error) {
	var total lifecycle.BatchResult
	held := func() bool { return f.hold != nil && f.hold.held() }
	if f.batches == 1 {
		if held() {
			if err := f.hold.wait(ctx); err != nil {
				return total, err
			}
		}
		in := f.in
		in.Batch = f.offset
		r, err := runBatch(ctx, f.gates, in, f.kind, f.first, f.settled)
		add(&total, r)
		return total, err
	}
	prefix := cmp.Or(f.prefix, "batch")
	if f.kind.Group.Name() != "" && f.in.Activity == "" && f.gates.release >= releaseGroups {
		f.in.GroupSize = groupSize(ctx) // recorded once for all the batches
	}
	inline := f.batches <= inlineBatches && f.gates.release >= releaseInlineBatches
	sel := workflow.NewSelector(ctx)
	var firstErr error
	next, running := 0, 0
	for next < f.batches || running > 0 {
		for running < cmp.Or(f.window, BatchWindow) && next < f.batches && ctx.Err() == nil && !held() {
			in := f.in
			in.Batch = f.offset + next
			var done workflow.Future
			var r lifecycle.BatchResult
			if inline {
				var set workflow.Settable
				done, set = workflow.NewFuture(ctx)
				workflow.Go(ctx, func(ctx workflow.Context) {
					var err error
					r, err = runBatch(ctx, f.gates, in, f.kind, nil, f.settled)
					set.Set(nil, err)
				})
			} else {
				cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
					WorkflowID:          fmt.Sprintf("%s/%s-%d", workflow.GetInfo(ctx).WorkflowExecution.ID, prefix, f.offset+next),
					WorkflowTaskTimeout: lifecycle.TaskTimeout,
				})
				done = f.kind.Workflow.ExecuteChild(cctx, in).ChildWorkflowFuture
			}
			sel.AddFuture(done, func(done workflow.Future) {
				err := done.Get(ctx, &r) // an inline batch's result is in r already
				add(&total, r)
				running--
				if err != nil && firstErr == nil {
					firstErr = err
				}
			})
			next++
			running++
		}
		if running == 0 && next < f.batches && ctx.Err() == nil && held() {
			if err := f.hold.wait(ctx); err != nil {
				return total, err
			}
			continue
		}
		if running == 0 {
			break // stopped before the remaining batches started
		}
		sel.Select(ctx)
	}
	return total, firstErr
}

func sum(total *lifecycle.BatchResult, r lifecycle.BatchResult) {
	total.Clusters += r.Clusters
	total.Done += r.Done
	total.Failed += r.Failed
	total.NotReady += r.NotReady
	total.ClustersFailed += r.ClustersFailed
	total.ClustersNotReady += r.ClustersNotReady
}

func (o *operation) add(total *lifecycle.BatchResult, r lifecycle.BatchResult) {
	sum(total, r)
	o.progress.BatchesDone++
	o.progress.ClustersDone += r.Clusters
	o.progress.ResourcesFailed += r.Failed
}

// perCluster returns the activity the target's kind uses instead of the usual one for a
// batch kind (the zero Activity: the usual).
func (o *operation) perCluster(kind string) lifecycle.Activity[lifecycle.ClusterInput, lifecycle.ClusterResult] {
	if f := o.in.Target.Kind().PerCluster; f != nil {
		return f(o.in.Target, kind)
	}
	return lifecycle.Activity[lifecycle.ClusterInput, lifecycle.ClusterResult]{}
}

// runBatch works on every cluster of one batch, all concurrently: in group activities of
// up to GroupSize clusters when the kind has them, a cluster that fails in its group going
// on in its own activity; else one activity per cluster. clusters is looked up when not
// given. settled (optional) hears of each cluster as it is done.
func runBatch(ctx workflow.Context, g gates, in lifecycle.BatchInput, kind BatchKind, clusters []string,
	settled func(workflow.Context, string)) (lifecycle.BatchResult, error) {
	perCluster, err := clusterActivity(in, kind)
	if err != nil {
		return lifecycle.BatchResult{}, err
	}
	listed := clusters == nil
	size := in.GroupSize
	recordSize := func() {
		if size == 0 && kind.Group.Name() != "" && in.Activity == "" && g.release >= releaseGroups {
			size = groupSize(ctx)
		}
	}
	// Runs from before releaseGroupLists recorded the size after listing: replays keep
	// their order of commands.
	if g.release >= releaseGroupLists {
		recordSize()
	}
	// A listed batch (a child workflow) stores its counts for status summaries; one that
	// was stopped leaves them to be counted live, as does a failure to count.
	// Nor is a batch listed from another context's this one's to count.
	count := listed && !kind.KeepsCounts && in.ClustersOf == ""
	selfListed := listed && size > 1 && kind.GroupLists && g.release >= releaseGroupLists
	if listed && !selfListed {
		if err := kind.List.Execute(listing(ctx), in).Get(ctx, &clusters); err != nil {
			return lifecycle.BatchResult{}, err
		}
	}
	recordSize()
	t := &batchTally{res: lifecycle.BatchResult{Clusters: len(clusters)}, tolerant: in.Tolerant, settled: settled}
	b := &batchRun{ctx: ctx, sel: workflow.NewSelector(ctx), opts: kind.Options, perCluster: perCluster, group: kind.Group,
		tally: t, agents: g.release >= releaseAgents, offline: offlineOf(in), size: size,
		base: lifecycle.ClusterInput{ContextID: in.ContextID, Detail: in.Detail, Previous: in.Previous, Next: in.Next, Drift: in.Drift, Gate: in.Gate}}
	switch {
	case selfListed:
		b.listingGroup(in, lifecycle.GroupBatch{Index: in.Batch, ClustersOf: in.ClustersOf, Size: size, Count: count})
	case size > 1:
		b.inGroups(clusters)
	default:
		for _, c := range clusters {
			b.alone(c, nil)
		}
	}
	b.wait()
	if count && !t.counted && ctx.Err() == nil && g.has(ctx, changeCountBatch) {
		_ = lifecycle.CountBatch.Execute(counting(ctx), in).Get(ctx, nil)
	}
	return t.res, t.firstErr
}

// batchTally sums a batch's results as its clusters settle: the first error fails the
// batch unless it is tolerant.
type batchTally struct {
	res      lifecycle.BatchResult
	firstErr error
	tolerant bool
	settled  func(workflow.Context, string) // nil: no one hears of each cluster
	counted  bool                           // the group that listed the batch counted it
}

func (t *batchTally) add(ctx workflow.Context, c string, r lifecycle.ClusterResult, err error) {
	if err != nil && t.firstErr == nil && !t.tolerant {
		t.firstErr = err
	}
	t.res.Done += r.Done
	t.res.Failed += r.Failed
	t.res.NotReady += r.NotReady
	if err != nil || r.Failed > 0 {
		t.res.ClustersFailed++
	}
	if err != nil || r.NotReady > 0 || r.Failed > 0 {
		t.res.ClustersNotReady++
	}
	if t.settled != nil {
		t.settled(ctx, c)
	}
}

// batchRun schedules a batch's activities on one selector, and waits for them all.
type batchRun struct {
	ctx        workflow.Context
	sel        workflow.Selector
	pending    int
	base       lifecycle.ClusterInput
	opts       func(workflow.Context) workflow.Context
	perCluster lifecycle.Activity[lifecycle.ClusterInput, lifecycle.ClusterResult]
	group      lifecycle.Activity[lifecycle.GroupInput, lifecycle.GroupResult]
	tally      *batchTally
	agents     bool // releaseAgents: agent clusters are awaited
	offline    rollout.Offline
	size       int // clusters per group
}

// alone works on cluster c in an activity of its own; after, if set, is what its group
// learned of it before leaving it.
func (b *batchRun) alone(c string, after *lifecycle.Prior) {
	one := b.base
	one.Cluster, one.After = c, after
	actx := b.opts(b.ctx)
	if after != nil {
		actx = continuing(actx, after.Attempts)
	}
	b.pending++
	f := b.perCluster.Execute(actx, one)
	b.sel.AddFuture(f.Future, func(workflow.Future) {
		var r lifecycle.ClusterResult
		err := f.Get(b.ctx, &r)
		b.settle(c, r, err)
	})
}

// settle tallies cluster c's result, or awaits its agent's report when the work was given
// to its agent.
func (b *batchRun) settle(c string, r lifecycle.ClusterResult, err error) {
	if err != nil || r.Awaiting == nil || !b.agents {
		b.tally.add(b.ctx, c, r, err)
		return
	}
	b.pending++
	w := *r.Awaiting
	w.Context, w.Offline = b.base.ContextID, b.offline
	f := lifecycle.AwaitAgent.Execute(awaiting(b.ctx, w.Offline), w)
	b.sel.AddFuture(f.Future, func(workflow.Future) {
		var r lifecycle.ClusterResult
		err := f.Get(b.ctx, &r)
		b.tally.add(b.ctx, c, r, err)
	})
}

// inGroups works on clusters in group activities of b.size.
func (b *batchRun) inGroups(clusters []string) {
	for group := range slices.Chunk(clusters, b.size) {
		b.inGroup(group)
	}
}

// inGroup works on clusters in one group activity; those the group leaves go on alone.
func (b *batchRun) inGroup(clusters []string) {
	b.pending++
	f := b.group.Execute(grouped(b.opts(b.ctx)), lifecycle.GroupInput{ClusterInput: b.base, Clusters: clusters})
	b.sel.AddFuture(f.Future, func(workflow.Future) {
		var r lifecycle.GroupResult
		if err := f.Get(b.ctx, &r); err != nil {
			b.failed(clusters, err)
			return
		}
		b.ended(r)
	})
}

// listingGroup works on the batch of in in one group activity that lists it (batch);
// a batch too large for one group comes back unworked, to go on in groups.
func (b *batchRun) listingGroup(in lifecycle.BatchInput, batch lifecycle.GroupBatch) {
	b.pending++
	f := b.group.Execute(grouped(b.opts(b.ctx)), lifecycle.GroupInput{ClusterInput: b.base, Batch: &batch})
	b.sel.AddFuture(f.Future, func(workflow.Future) {
		var r lifecycle.GroupResult
		if err := f.Get(b.ctx, &r); err != nil {
			b.listThenFail(in, err)
			return
		}
		b.tally.res.Clusters, b.tally.counted = r.Listed, r.Counted
		if r.Handed != nil {
			b.inGroups(r.Handed)
			return
		}
		b.ended(r)
	})
}

// listThenFail tallies every cluster of a batch whose listing group failed as failed
// with err, once it has listed them, as a group given its clusters would; a stopped
// operation's batch is listed too, a few tries at most.
func (b *batchRun) listThenFail(in lifecycle.BatchInput, err error) {
	ctx := b.ctx
	if ctx.Err() != nil {
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: batchRead, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	b.pending++
	f := lifecycle.ListBatch.Execute(ctx, in)
	b.sel.AddFuture(f.Future, func(workflow.Future) {
		var clusters []string
		if f.Get(ctx, &clusters) != nil && b.tally.firstErr == nil {
			b.tally.firstErr = err // no cluster known to weigh: even a tolerant batch fails
		}
		b.tally.res.Clusters = len(clusters)
		b.failed(clusters, err)
	})
}

// failed tallies clusters as failed with err, their group having failed.
func (b *batchRun) failed(clusters []string, err error) {
	for _, c := range clusters {
		b.tally.add(b.ctx, c, lifecycle.ClusterResult{}, err)
	}
}

// ended settles the clusters a group finished; those it left go on alone.
func (b *batchRun) ended(r lifecycle.GroupResult) {
	for _, d := range r.Done {
		b.settle(d.Cluster, d.Result, nil)
	}
	for _, l := range r.Left {
		b.alone(l.Cluster, &r.Prior)
	}
}

// wait selects until every activity scheduled, those scheduled meanwhile too, is done.
func (b *batchRun) wait() {
	for ; b.pending > 0; b.pending-- {
		b.sel.Select(b.ctx)
	}
}

// offlineOf is the offline policy of a batch's agent clusters: its rollout's, else wait.
func offlineOf(in lifecycle.BatchInput) rollout.Offline {
	if in.Offline != nil {
		return *in.Offline
	}
	return (&rollout.Spec{}).OfflineOf()
}

// clusterActivity is the activity a batch runs on each of its clusters: the target
// kind's own, which the batch's input names, or the batch kind's.
func clusterActivity(in lifecycle.BatchInput, kind BatchKind) (lifecycle.Activity[lifecycle.ClusterInput, lifecycle.ClusterResult], error) {
	if in.Activity == "" {
		return kind.PerCluster, nil
	}
	a, ok := lifecycle.Named[lifecycle.ClusterInput, lifecycle.ClusterResult](in.Activity)
	if !ok {
		return a, fmt.Errorf("batch input: %q is no activity on one cluster", in.Activity)
	}
	return a, nil
}

// changeCountBatch marks batch workflows that count their statuses at the end.
const changeCountBatch = "count-batch"

// RunBatch is the body of a batch child workflow of kind: it works on the batch's
// clusters, passing retry reports on to the parent workflow.
func RunBatch(ctx workflow.Context, in lifecycle.BatchInput, kind BatchKind) (lifecycle.BatchResult, error) {
	var settled func(workflow.Context, string)
	if parent := workflow.GetInfo(ctx).ParentWorkflowExecution; parent != nil {
		fw := &forwarder{parent: *parent, reported: map[string]bool{}}
		onRetryReports(ctx, fw.report)
		settled = fw.settled
	}
	return runBatch(ctx, newGates(ctx), in, kind, nil, settled)
}

// ApplyBatch is the child workflow applying one batch of clusters.
func ApplyBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return RunBatch(ctx, in, applyBatch)
}

// ReadBatch is the child workflow reading one batch of clusters.
func ReadBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return RunBatch(ctx, in, readBatch)
}

// DeleteBatch is the child workflow deleting one batch of clusters.
func DeleteBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return RunBatch(ctx, in, deleteBatch)
}

// PruneBatch is the child workflow removing, from one batch of a previous revision's
// clusters, what the next revision no longer has.
func PruneBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return RunBatch(ctx, in, pruneBatch)
}
