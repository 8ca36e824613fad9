package contract_test

import (
	"context"
	"errors"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
)

type hooked struct{ called []string }

func (h *hooked) Run(context.Context, contract.Context) error {
	h.called = append(h.called, "run")
	return nil
}
func (h *hooked) Terminate(context.Context, contract.Context) error {
	h.called = append(h.called, "terminate")
	return nil
}
func (h *hooked) Finished(context.Context, contract.Context) error {
	h.called = append(h.called, "finished")
	return nil
}

// Dispatch calls the method the hook names; a controller without it has nothing to do;
// a hook it cannot know is refused, not ignored.
func TestDispatch(t *testing.T) {
	h := &hooked{}
	plain := contract.Func(func(context.Context, contract.Context) error { return errors.New("run called") })
	for _, hook := range []string{contract.HookRun, contract.HookTerminate, contract.HookFinished} {
		c := &contracttest.Fake{In: contract.Input{Hook: hook}}
		if err := contract.Dispatch(context.Background(), h, c); err != nil {
			t.Fatal(err)
		}
		err := contract.Dispatch(context.Background(), plain, c)
		if (hook == contract.HookRun) != (err != nil) {
			t.Errorf("hook %q of a controller with only Run: %v", hook, err)
		}
	}
	if got := len(h.called); got != 3 || h.called[0] != "run" || h.called[1] != "terminate" || h.called[2] != "finished" {
		t.Errorf("called %v", h.called)
	}
	var r *contract.Refusal
	if err := contract.Dispatch(context.Background(), h, &contracttest.Fake{In: contract.Input{Hook: "migrate"}}); !errors.As(err, &r) {
		t.Errorf("unknown hook: %v, want a refusal", err)
	}
}
