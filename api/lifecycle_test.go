package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
)

// lifecycleClient is a client whose server's contexts the test can write, and whose
// operations are recorded, not run.
func lifecycleClient(t *testing.T) (*client, *Server, *operations) {
	ops := &operations{}
	var srv *Server
	c := newClient(t, func(s *Server) { s.Ops, srv = ops, s })
	tree(t, c)
	return c, srv, ops
}

// record appends a state to the history of the target at path, with a context in status
// (none when ctxID is "").
func record(t *testing.T, srv *Server, path, state, ctxID, status string) {
	t.Helper()
	ctx := context.Background()
	if ctxID != "" {
		if err := srv.Contexts.Create(ctx, &appctx.Context{ID: ctxID, DIG: path, Instance: ctxID, Revision: 1, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := digstate.Change(ctx, srv.Store, path, func(lifecycle.StateInfo) ([]lifecycle.Action, error) {
		return []lifecycle.Action{{State: state, ContextID: ctxID, Revision: 1}}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func stateOf(t *testing.T, srv *Server, path string) lifecycle.StateInfo {
	t.Helper()
	_, info, err := digstate.Load(context.Background(), srv.Store, path)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func refused(t *testing.T, r response, want string) {
	t.Helper()
	if m := r.must(t, http.StatusConflict).message(t); m != want {
		t.Errorf("message %q\nwant    %q", m, want)
	}
}

const digName = `deployment intent group "dig1" (project "p1", composite app "ca" "v1")`

// A new DIG is Created: only approve (and changes) go; approving twice records one
// Approved; a change of an intent withdraws the approval.
func TestCreatedDIGNeedsApproval(t *testing.T) {
	c, srv, ops := lifecycleClient(t)
	refused(t, c.do("POST", pDIG+"/instantiate", nil), digName+" is Created: instantiate needs one of [Approved Terminated]")
	refused(t, c.do("POST", pDIG+"/terminate", nil), digName+" is Created: terminate needs one of [Instantiated InstantiateStopped TerminateStopped]")
	refused(t, c.do("POST", pDIG+"/update", nil), digName+" is Created: update needs one of [Instantiated]")
	refused(t, c.do("POST", pDIG+"/rollback", map[string]any{"spec": map[string]any{"revision": "1"}}), digName+" is Created: rollback needs one of [Instantiated]")
	c.do("POST", pDIG+"/approve", nil).must(t, http.StatusAccepted)
	c.do("POST", pDIG+"/approve", nil).must(t, http.StatusAccepted)
	if info := stateOf(t, srv, pDIG); len(info.Actions) != 2 || info.Current() != lifecycle.StateApproved {
		t.Fatalf("history after approving twice: %+v", info.Actions)
	}
	c.do("PUT", pGPI, res("gpi1", nil)).must(t, http.StatusOK)
	if got := stateOf(t, srv, pDIG).Current(); got != lifecycle.StateCreated {
		t.Errorf("state after changing an approved DIG's intent: %s, want Created", got)
	}
	if len(ops.started) != 0 {
		t.Errorf("operations started: %v", ops.started)
	}
}

// An instantiated DIG may be terminated, changed (through update later), but neither
// approved nor deleted.
func TestInstantiatedDIGRefusesApproveAndDelete(t *testing.T) {
	c, srv, ops := lifecycleClient(t)
	dig2 := pCA + "/deployment-intent-groups/dig2"
	c.do("POST", pCA+"/deployment-intent-groups", res("dig2", digSpec())).must(t, http.StatusCreated)
	for _, p := range []string{pDIG, dig2} {
		record(t, srv, p, lifecycle.StateInstantiated, "ctx-"+p[len(p)-1:], lifecycle.StatusInstantiated)
	}
	refused(t, c.do("POST", pDIG+"/approve", nil), digName+" is Instantiated: approve needs one of [Created Terminated Updated Migrated]")
	refused(t, c.do("DELETE", dig2, nil), `deployment intent group "dig2" is Instantiated: terminate it before deleting it`)
	c.do("PUT", pGPI, res("gpi1", nil)).must(t, http.StatusOK)
	if got := stateOf(t, srv, pDIG).Current(); got != lifecycle.StateInstantiated {
		t.Errorf("changing an instantiated DIG's intent made it %s", got)
	}
	c.do("POST", pDIG+"/terminate", nil).must(t, http.StatusAccepted)
	if len(ops.started) != 1 || !strings.HasPrefix(ops.started[0], "terminate ") {
		t.Errorf("operations started: %v", ops.started)
	}
}

// An instantiate or terminate whose begin was recorded but which no workflow runs (its
// answer lost) is resumed by the same request again, for the recorded context: before,
// every operation refused the target for good (make chaos, seed 3). An ended one stays
// refused.
func TestTheSameOperationAgainResumesAnUnendedTransition(t *testing.T) {
	c, srv, ops := lifecycleClient(t)
	dig2 := pCA + "/deployment-intent-groups/dig2"
	c.do("POST", pCA+"/deployment-intent-groups", res("dig2", digSpec())).must(t, http.StatusCreated)
	record(t, srv, pDIG, lifecycle.StateTerminated, "ctx-1", lifecycle.StatusTerminating)
	record(t, srv, dig2, lifecycle.StateInstantiated, "ctx-2", lifecycle.StatusInstantiating)
	c.do("POST", pDIG+"/terminate", nil).must(t, http.StatusAccepted)
	c.do("POST", dig2+"/instantiate", nil).must(t, http.StatusAccepted)
	if want := []string{"terminate " + pDIG, "instantiate " + dig2}; !slices.Equal(ops.started, want) || !slices.Equal(ops.contexts, []string{"ctx-1", "ctx-2"}) {
		t.Errorf("operations started %v for contexts %v, want %v for ctx-1, ctx-2", ops.started, ops.contexts, want)
	}
	refused(t, c.do("POST", pDIG+"/update", nil), digName+" is Terminated: update needs one of [Instantiated]")
	if err := srv.Contexts.SetStatus(context.Background(), "ctx-1", lifecycle.StatusTerminated, ""); err != nil {
		t.Fatal(err)
	}
	refused(t, c.do("POST", pDIG+"/terminate", nil), digName+" is Terminated: terminate needs one of [Instantiated InstantiateStopped TerminateStopped]")
	if len(ops.started) != 2 {
		t.Errorf("operations started: %v", ops.started)
	}
}

// A terminated DIG or logical cloud is deleted once its terminate completed.
func TestDeleteWaitsForTheTerminate(t *testing.T) {
	c, srv, _ := lifecycleClient(t)
	dig2 := pCA + "/deployment-intent-groups/dig2"
	c.do("POST", pCA+"/deployment-intent-groups", res("dig2", digSpec())).must(t, http.StatusCreated)
	record(t, srv, dig2, lifecycle.StateTerminated, "ctx-2", lifecycle.StatusTerminating)
	refused(t, c.do("DELETE", dig2, nil), `deployment intent group "dig2" is still terminating; delete it once the terminate completed`)
	if err := srv.Contexts.SetStatus(context.Background(), "ctx-2", lifecycle.StatusTerminated, ""); err != nil {
		t.Fatal(err)
	}
	c.do("DELETE", dig2, nil).must(t, http.StatusNoContent)

	cloud := pP + "/logical-clouds/lc2"
	record(t, srv, cloud, lifecycle.StateInstantiated, "ctx-lc2", lifecycle.StatusInstantiated)
	refused(t, c.do("DELETE", cloud, nil), `logical cloud "lc2" is Instantiated: terminate it before deleting it`)
	record(t, srv, cloud, lifecycle.StateTerminated, "", "")
	c.do("DELETE", cloud, nil).must(t, http.StatusNoContent)
}

// A logical cloud has no approval: a new one may be instantiated at once, and not
// twice.
func TestLogicalCloudInstantiatesFromCreated(t *testing.T) {
	c, srv, ops := lifecycleClient(t)
	cloud := pP + "/logical-clouds/lc2"
	c.do("POST", cloud+"/cluster-references", res("c1", map[string]any{"clusterProvider": "cp1", "cluster": "c1"})).must(t, http.StatusCreated)
	c.do("POST", cloud+"/instantiate", nil).must(t, http.StatusAccepted)
	record(t, srv, cloud, lifecycle.StateInstantiated, "ctx-lc2", lifecycle.StatusInstantiated)
	refused(t, c.do("POST", cloud+"/instantiate", nil), `logical cloud "lc2" (project "p1") is Instantiated: instantiate needs one of [Created Terminated]`)
	if len(ops.started) != 1 {
		t.Errorf("operations started: %v", ops.started)
	}
}
