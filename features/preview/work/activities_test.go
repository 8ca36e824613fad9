package work

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The operation previewed follows the DIG's state; other states are refused, naming it.
func TestOperationFor(t *testing.T) {
	dig := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	hist := func(actions ...lifecycle.Action) lifecycle.StateInfo { return lifecycle.StateInfo{Actions: actions} }
	created := lifecycle.Action{State: lifecycle.StateCreated}
	approved := lifecycle.Action{State: lifecycle.StateApproved}
	inst := lifecycle.Action{State: lifecycle.StateInstantiated, ContextID: "c1", Revision: 1}
	upd := []lifecycle.Action{{State: lifecycle.StateUpdated, ContextID: "c1", Revision: 1}, {State: lifecycle.StateInstantiated, ContextID: "c2", Revision: 2}}
	for _, tc := range []struct {
		name     string
		info     lifecycle.StateInfo
		revision int64
		want     flow.PreviewStart
		wantErr  string
	}{
		{"approved: instantiate", hist(created, approved), 0, flow.PreviewStart{Op: lifecycle.OpInstantiate, Revision: 1}, ""},
		{"instantiated: update", hist(append([]lifecycle.Action{created, approved, inst}, upd...)...), 0,
			flow.PreviewStart{Op: lifecycle.OpUpdate, Previous: "c2", Current: 2, Revision: 3}, ""},
		{"rollback to 1", hist(append([]lifecycle.Action{created, approved, inst}, upd...)...), 1,
			flow.PreviewStart{Op: lifecycle.OpRollback, Previous: "c2", Source: "c1", Current: 2, Revision: 3}, ""},
		{"rollback to a revision not there", hist(created, approved, inst), 5, flow.PreviewStart{},
			`deployment intent group "d" (project "p", composite app "ca" "v1") has no revision 5 in its current instance (revisions 1 to 1)`},
		{"created", hist(created), 0, flow.PreviewStart{},
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Created: a rollout preview shows its next instantiate (when it is Approved or Terminated) or update (when it is Instantiated)`},
		{"rollback while approved", hist(created, approved), 1, flow.PreviewStart{},
			`deployment intent group "d" (project "p", composite app "ca" "v1") is Approved: rollback needs one of [Instantiated]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := operationFor(dig, tc.info, tc.revision)
			msg := ""
			var appErr *temporal.ApplicationError
			if errors.As(err, &appErr) {
				msg = appErr.Message()
			}
			if msg != tc.wantErr || got != tc.want {
				t.Errorf("got %+v, %q\nwant %+v, %q", got, msg, tc.want, tc.wantErr)
			}
		})
	}
}
