package workflowmgr

import (
	"errors"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
)

var scope = Scope{DIG: lifecycle.Target{Project: "pa", CompositeApp: "ca", Version: "v1", DIG: "dig"}}

func TestIDsStayUnderTheDIGsPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"wf-1":                          "user/pa/ca/v1/dig/wf-1",
		"user/pa/ca/v1/dig/wf-1":        "user/pa/ca/v1/dig/wf-1",
		"logical-cloud/pb/default":      "user/pa/ca/v1/dig/logical-cloud/pb/default",
		"user/pb/ca/v1/dig/wf-1":        "user/pa/ca/v1/dig/user/pb/ca/v1/dig/wf-1",
		"user/pa/ca/v1/dig2/wf-1":       "user/pa/ca/v1/dig/user/pa/ca/v1/dig2/wf-1",
		"dig/pa/ca/v1/dig":              "user/pa/ca/v1/dig/dig/pa/ca/v1/dig",
		"user/pa/ca/v1/digger/x":        "user/pa/ca/v1/dig/user/pa/ca/v1/digger/x",
		"../../../../dig/pa/ca/v1/dig2": "user/pa/ca/v1/dig/../../../../dig/pa/ca/v1/dig2",
	} {
		if got := scope.ID(in); got != want {
			t.Errorf("ID(%q) = %q, want %q", in, got, want)
		}
	}
	// Names hold no "/": project "a.b" and project "a" with composite app "b.c" differ.
	a := Scope{DIG: lifecycle.Target{Project: "a.b", CompositeApp: "c", Version: "v", DIG: "d"}}
	b := Scope{DIG: lifecycle.Target{Project: "a", CompositeApp: "b.c", Version: "v", DIG: "d"}}
	if a.Prefix() == b.Prefix() || strings.HasPrefix(a.Prefix(), b.Prefix()) || strings.HasPrefix(b.Prefix(), a.Prefix()) {
		t.Errorf("prefixes %q and %q overlap", a.Prefix(), b.Prefix())
	}
	if got := ScopeOf("/projects/pa/composite-apps/ca/v1/deployment-intent-groups/dig/temporal-workflow-intents/wi"); got != scope {
		t.Errorf("ScopeOf: %+v", got)
	}
	if scope.Default("", "wi") != "user/pa/ca/v1/dig/wi" || scope.Default(KindHook, "pre") != "user/pa/ca/v1/dig/hook/pre" {
		t.Error("default ids")
	}
}

func TestRulesRefuseTemcosQueueAndTypesAndUngrantedQueues(t *testing.T) {
	rules := Rules{OwnTaskQueue: "temco", Grants: map[string][]string{"pa": {"MIGRATION_TASK_Q"}, "*": {"shared"}}}
	spec := func(queue, typ string, relocate map[string]string) *Spec {
		s := &Spec{WorkflowClient: &ClientSpec{}, Temporal: &TemporalSpec{WorkflowClientName: typ, StartOptions: StartOptions{TaskQueue: queue}}}
		if relocate != nil {
			s.Temporal.Params.ActivityParams = map[string]map[string]string{"relocate": relocate}
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		s         *Spec
		admin     bool
		hook      bool
		field     string // "" accepted
		forbidden bool
	}{
		{"the project's queue", spec("pa", "Greet", nil), false, false, "", false},
		{"a queue of the project's", spec("pa/greet", "", nil), false, false, "", false},
		{"a granted queue", spec("MIGRATION_TASK_Q", "", nil), false, false, "", false},
		{"a queue granted to all", spec("shared", "W", nil), false, true, "", false},
		{"another project's queue", spec("pb", "Greet", nil), false, false, fieldQueue, true},
		{"a prefix that is not the project", spec("pab/x", "Greet", nil), false, false, fieldQueue, true},
		{"an admin on any queue", spec("pb", "Greet", nil), true, false, "", false},
		{"temco's queue", spec("temco", "Greet", nil), true, false, fieldQueue, true},
		{"temco's queue by its type", spec("temco", "", nil), true, false, fieldQueue, true},
		{"temco's type elsewhere", spec("pa", lifecycle.WorkflowDIG, nil), true, false, fieldType, true},
		{"Relocate of the DIG", spec("temco", "Relocate", map[string]string{"app": "a"}), false, false, "", false},
		{"Relocate of another DIG", spec("temco", "Relocate", map[string]string{"project": "pb"}), false, false,
			"spec.temporal.workflowParams.activityParams.relocate.project", true},
		{"Relocate elsewhere", spec("pa", "Relocate", nil), true, false, fieldQueue, false},
		{"Relocate as a hook", spec("temco", "Relocate", nil), true, true, fieldQueue, true},
	} {
		err := rules.Check(tc.s, scope, tc.admin, tc.hook)
		var f *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &f) || f.Field != tc.field || f.Forbidden != tc.forbidden):
			t.Errorf("%s: error %v, want field %s (forbidden %v)", tc.name, err, tc.field, tc.forbidden)
		}
	}
}

func TestRelocateIsBoundToItsDIG(t *testing.T) {
	p := WorkflowParams{ActivityParams: map[string]map[string]string{"relocate": {"app": "web", "from": "p+c1", "to": "p+c2", "project": "pa"}}}
	got, err := BindRelocate(p, scope)
	if err != nil {
		t.Fatal(err)
	}
	r := got.ActivityParams["relocate"]
	if r["project"] != "pa" || r["compositeApp"] != "ca" || r["compositeAppVersion"] != "v1" || r["deploymentIntentGroup"] != "dig" || r["app"] != "web" {
		t.Errorf("bound %v", r)
	}
	if _, ok := p.ActivityParams["relocate"]["compositeApp"]; ok {
		t.Error("the intent's parameters were changed")
	}
	p.ActivityParams["relocate"]["deploymentIntentGroup"] = "other"
	if _, err := BindRelocate(p, scope); err == nil || !strings.Contains(err.Error(), "deploymentIntentGroup") {
		t.Errorf("another DIG: %v", err)
	}
}

func TestParseGrants(t *testing.T) {
	g, err := ParseGrants(" pa=Q1, *=shared ,pa=Q2,")
	if err != nil || len(g["pa"]) != 2 || g["*"][0] != "shared" {
		t.Errorf("%v, %v", g, err)
	}
	for _, bad := range []string{"pa", "=q", "pa="} {
		if _, err := ParseGrants(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
