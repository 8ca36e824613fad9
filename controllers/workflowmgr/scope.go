package workflowmgr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Scope binds what a DIG's intents start, read and cancel to that DIG: every workflow id
// they name is one under the DIG's prefix, "user/<project>/<compositeApp>/<version>/<dig>/".
// temco's own workflows ("dig/...", "logical-cloud/...") and other DIGs' are out of
// reach. Names hold no "/", so one DIG's prefix is never another's. A prefix was chosen
// over a Temporal namespace per project: namespaces are created by Temporal's operators,
// not by an API call, and EMCO's users' workers poll one namespace.
type Scope struct{ DIG lifecycle.Target }

// userPrefix starts every id of users' workflows; temco's own ids never do.
const userPrefix = "user/"

// KindHook names tac's hook intents in default ids (Default), beside workflow intents.
const KindHook = "hook"

// ScopeOf is the scope of the intent whose store id is intentID:
// /projects/p/composite-apps/ca/v/deployment-intent-groups/dig/<intents>/name.
func ScopeOf(intentID string) Scope {
	seg := strings.Split(strings.TrimPrefix(intentID, "/"), "/")
	if len(seg) < 8 {
		return Scope{DIG: lifecycle.Target{Project: "?", CompositeApp: "?", Version: "?", DIG: "?"}}
	}
	return Scope{DIG: lifecycle.Target{Project: seg[1], CompositeApp: seg[3], Version: seg[4], DIG: seg[6]}}
}

// Prefix is the DIG's prefix of workflow ids.
func (s Scope) Prefix() string {
	d := s.DIG
	return userPrefix + strings.Join([]string{d.Project, d.CompositeApp, d.Version, d.DIG}, "/") + "/"
}

// ID is the workflow id an intent's id means: itself when under the prefix already (as
// temco answers it), else the prefix and it. So EMCO's files keep their ids, and a
// caller can name no workflow outside the DIG's.
func (s Scope) ID(id string) string {
	if strings.HasPrefix(id, s.Prefix()) {
		return id
	}
	return s.Prefix() + id
}

// Default is the id of an intent's runs when it names none: the prefix, the kind of
// intent ("" for workflow intents, KindHook for tac's) and its name.
func (s Scope) Default(kind, name string) string {
	if kind == "" {
		return s.Prefix() + name
	}
	return s.Prefix() + kind + "/" + name
}

// Rules are what intents may start on temco's Temporal, beyond the DIG's ids.
type Rules struct {
	// OwnTaskQueue is temco's: no intent starts anything there but the built-in Relocate
	// of its own DIG.
	OwnTaskQueue string
	// Grants are the task queues tenants of a project may use besides their project's own
	// ("<project>" and "<project>/..."), by project; "*" grants to every project. Admins
	// may use any queue but temco's.
	Grants map[string][]string
}

// ParseGrants reads "project=queue" entries, comma-separated ("*=queue" for every
// project).
func ParseGrants(list string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		project, queue, ok := strings.Cut(e, "=")
		if !ok || project == "" || queue == "" {
			return nil, fmt.Errorf("task queue grant %q is not project=queue", e)
		}
		out[project] = append(out[project], queue)
	}
	return out, nil
}

// Field errors name the body field at fault.
type FieldError struct {
	Field, Msg string
	Forbidden  bool // 403: the caller may not; else 400: it can never be
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

const (
	fieldQueue = "spec.temporal.workflowStartOptions.TaskQueue"
	fieldType  = "spec.temporal.workflowClientName"
)

// Check refuses what an intent of scope's DIG may not start: temco's task queue (but
// for Relocate), temco's workflow types, and, for a tenant (admin false), a task queue
// its project was not granted. hook is true for tac's hook intents, which run within the
// DIG's own operations and never start Relocate.
func (r Rules) Check(s *Spec, scope Scope, admin, hook bool) error {
	if s.Temporal == nil {
		return nil
	}
	queue := s.Temporal.StartOptions.TaskQueue
	typ := workflowType(s.Temporal)
	own := lifecycle.IsOwnWorkflowType(typ)
	switch {
	case r.OwnTaskQueue != "" && queue == r.OwnTaskQueue && (typ != lifecycle.WorkflowRelocate || hook):
		return &FieldError{Field: fieldQueue, Msg: fmt.Sprintf("%q is temco's own task queue: an intent may start only %s there, from a workflow intent",
			queue, lifecycle.WorkflowRelocate), Forbidden: true}
	case own && typ != lifecycle.WorkflowRelocate, own && hook:
		return &FieldError{Field: fieldType, Msg: fmt.Sprintf("%q is a workflow type of temco's own", typ), Forbidden: true}
	case typ == lifecycle.WorkflowRelocate && r.OwnTaskQueue != "" && queue != r.OwnTaskQueue:
		return &FieldError{Field: fieldQueue, Msg: fmt.Sprintf("%s runs on temco's task queue %q, not %q", typ, r.OwnTaskQueue, queue)}
	case typ == lifecycle.WorkflowRelocate:
		_, err := BindRelocate(s.Temporal.Params, scope)
		return err
	case !admin && !r.granted(scope.DIG.Project, queue):
		return &FieldError{Field: fieldQueue, Msg: fmt.Sprintf("task queue %q is not granted to project %q: use %q or %q, or ask an admin to grant it",
			queue, scope.DIG.Project, scope.DIG.Project, scope.DIG.Project+"/<name>"), Forbidden: true}
	}
	return nil
}

func (r Rules) granted(project, queue string) bool {
	return queue == project || strings.HasPrefix(queue, project+"/") ||
		slices.Contains(r.Grants[project], queue) || slices.Contains(r.Grants["*"], queue)
}

// workflowType is the type an intent starts: workflowClientName, else the task queue (as
// EMCO's sample client does).
func workflowType(t *TemporalSpec) string {
	if t.WorkflowClientName != "" {
		return t.WorkflowClientName
	}
	return t.StartOptions.TaskQueue
}

// BindRelocate returns params with its relocation bound to scope's DIG: the DIG's keys
// filled where empty, and refused where they name another DIG.
func BindRelocate(p WorkflowParams, scope Scope) (WorkflowParams, error) {
	d := scope.DIG
	own := map[string]string{"project": d.Project, "compositeApp": d.CompositeApp,
		"compositeAppVersion": d.Version, "deploymentIntentGroup": d.DIG}
	in := p.ActivityParams[lifecycle.RelocateParamsKey]
	out := make(map[string]string, len(in)+len(own))
	for k, v := range in {
		out[k] = v
	}
	for _, k := range []string{"project", "compositeApp", "compositeAppVersion", "deploymentIntentGroup"} {
		if v := in[k]; v != "" && v != own[k] {
			return p, &FieldError{Field: "spec.temporal.workflowParams.activityParams." + lifecycle.RelocateParamsKey + "." + k,
				Msg: fmt.Sprintf("%q is not this intent's DIG's (%q): Relocate moves an app of the DIG it is started for", v, own[k]), Forbidden: true}
		}
		out[k] = own[k]
	}
	bound := p
	bound.ActivityParams = make(map[string]map[string]string, len(p.ActivityParams))
	for k, v := range p.ActivityParams {
		bound.ActivityParams[k] = v
	}
	bound.ActivityParams[lifecycle.RelocateParamsKey] = out
	return bound, nil
}
