package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/features/registry"
	"github.com/temco/temco/internal/core/lifecycle"
)

// A restarted worker tells Temporal at once that its predecessor's activity attempts are
// dead. Temporal would find out by itself, but only when each attempt's heartbeat timeout
// (15 s for a group, 30 s for a preparation) and then each workflow's sticky
// schedule-to-start timeout (5 s) ran out. A worker that crashes is most often restarted
// in place (a container's restart, a process supervisor), and then those waits are most
// of the recovery.
//
// "Predecessor" must be certain, or a live worker's attempts would be failed (retried,
// harmlessly, but for nothing). So a worker holds a slot: an exclusive lock on a file of
// its host, which the kernel releases when the process dies. An attempt whose worker
// identity names this worker's name and slot, with another process's nonce, was
// started by a process that held this slot before: it is dead.

// Identity is how a worker names itself to Temporal: "<pid>@<name>/<slot>/<nonce>". The
// pid comes first as in the SDK's default identity ("<pid>@<host>").
type Identity struct {
	PID   int
	Name  string // the host's name, or --worker-name
	Slot  int    // ClaimSlot's
	Nonce string // this process's, random
}

// NewIdentity is this process's identity in slot.
func NewIdentity(name string, slot int) Identity {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return Identity{PID: os.Getpid(), Name: name, Slot: slot, Nonce: hex.EncodeToString(b)}
}

func (id Identity) String() string {
	return fmt.Sprintf("%d@%s/%d/%s", id.PID, id.Name, id.Slot, id.Nonce)
}

// Predecessor reports whether identity is another process's in this worker's name and
// slot: one that held the slot before this one, since a slot has one holder at a time.
func (id Identity) Predecessor(identity string) bool {
	_, rest, ok := strings.Cut(identity, "@")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return false
	}
	nameSlot, nonce := rest[:i], rest[i+1:]
	return nameSlot == id.Name+"/"+strconv.Itoa(id.Slot) && nonce != id.Nonce
}

// maxSlots bounds the workers of one task queue on one host.
const maxSlots = 256

// ClaimSlot takes the lowest free slot of taskQueue's workers in dir (a lock file each)
// and returns it, with the function that gives it back. The slot is held while release is
// reachable: the lock's file is closed when release is called, the process ends, or the
// file is collected.
func ClaimSlot(dir, namespace, taskQueue string) (int, func(), error) {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '_'
		}, s)
	}
	for slot := range maxSlots {
		path := filepath.Join(dir, fmt.Sprintf("temco-worker-%s-%s-%d.lock", clean(namespace), clean(taskQueue), slot))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return 0, nil, fmt.Errorf("worker slot: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			continue
		}
		return slot, func() { _ = f.Close() }, nil
	}
	return 0, nil, fmt.Errorf("worker slot: all %d slots of task queue %s in %s are held", maxSlots, taskQueue, dir)
}

// takeOverTypes are the workflows whose activities run long enough to matter: the
// operations, their batches and the reads, and the features' that say so (drift checks,
// previews, relocate: Feature.TakeOver); the long-lived workflows' activities are short
// store calls.
var takeOverTypes = slices.Concat([]string{
	lifecycle.WorkflowInstantiate, lifecycle.WorkflowTerminate, lifecycle.WorkflowUpdate,
	lifecycle.WorkflowRollback, lifecycle.WorkflowMigrate,
	lifecycle.WorkflowApplyBatch, lifecycle.WorkflowDeleteBatch, lifecycle.WorkflowPruneBatch,
	lifecycle.WorkflowReadStatus, lifecycle.WorkflowReadBatch,
}, featuresTakenOver())

// featuresTakenOver are the workflow types of every feature whose activities a restarted
// worker takes over (a feature switched off has none running on it: no harm).
func featuresTakenOver() []string {
	var out []string
	for _, f := range registry.All {
		out = append(out, f.TakeOver...)
	}
	return out
}

// ErrWorkerRestarted is the failure type of an attempt a restarted worker took over.
const ErrWorkerRestarted = "WorkerRestarted"

// TakeOver fails the activity attempts a predecessor of me left running in taskQueue's
// operations, so Temporal retries them now, and first clears those workflows' sticky
// queue, so their next workflow tasks go to the task queue rather than wait for the dead
// worker. It runs before the worker polls, and returns how many attempts it failed.
//
// release (may be nil) is called for each attempt before it is failed, to free what the
// dead attempt held: claims on the documents it was writing, which its retry would
// otherwise wait seconds for.
func TakeOver(ctx context.Context, c client.Client, namespace, taskQueue string, me Identity, release Release) (int, error) {
	if strings.ContainsAny(taskQueue, `'"\`) {
		return 0, nil // not expressible in a visibility query; Temporal's timeouts still apply
	}
	query := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running' AND WorkflowType IN ('%s')",
		taskQueue, strings.Join(takeOverTypes, "', '"))
	var runs [][2]string
	var page []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: query, PageSize: 1000, NextPageToken: page,
		})
		if err != nil {
			return 0, fmt.Errorf("list running operations: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			runs = append(runs, [2]string{e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()})
		}
		if page = resp.GetNextPageToken(); len(page) == 0 {
			break
		}
	}
	failed := make([]int, len(runs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, run := range runs {
		g.Go(func() error {
			n, err := takeOverRun(ctx, c, namespace, run[0], run[1], me, release)
			failed[i] = n
			return err
		})
	}
	err := g.Wait()
	total := 0
	for _, n := range failed {
		total += n
	}
	return total, err
}

// Release frees what a dead attempt of activity activityID of run runID held.
type Release func(ctx context.Context, runID, activityID string, attempt int32)

func takeOverRun(ctx context.Context, c client.Client, namespace, workflowID, runID string, me Identity, release Release) (int, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, workflowID, runID)
	if err != nil {
		return 0, ignoreEnded(err)
	}
	_, err = c.WorkflowService().ResetStickyTaskQueue(ctx, &workflowservice.ResetStickyTaskQueueRequest{
		Namespace: namespace, Execution: desc.GetWorkflowExecutionInfo().GetExecution(),
	})
	if err != nil {
		return 0, ignoreEnded(err)
	}
	n := 0
	for _, a := range desc.GetPendingActivities() {
		if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED || !me.Predecessor(a.GetLastWorkerIdentity()) {
			continue
		}
		if release != nil {
			release(ctx, runID, a.GetActivityId(), a.GetAttempt())
		}
		// Retried at once: the retry policy's backoff is for what failed, not for whom.
		dead := temporal.NewApplicationErrorWithOptions(fmt.Sprintf("worker %s, which ran this attempt, restarted", a.GetLastWorkerIdentity()),
			ErrWorkerRestarted, temporal.ApplicationErrorOptions{NextRetryDelay: time.Millisecond})
		if err := c.CompleteActivityByID(ctx, namespace, workflowID, runID, a.GetActivityId(), nil, dead); err != nil {
			if err = ignoreEnded(err); err != nil {
				return n, err
			}
			continue
		}
		n++
	}
	return n, nil
}

// ignoreEnded drops the errors of a workflow or attempt that ended meanwhile.
func ignoreEnded(err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}
