package emcoctl

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
)

// step is what a command does with one document: a request, or a skip and why.
// Commands first plan every step, so a document they cannot address stops the run
// before anything is sent.
type step struct {
	doc    *Document
	method string // "" when skipped
	path   string // below /v2; may carry the anchor's ?query
	send   bool   // carry the document's body (JSON, or multipart with its files)
	skip   string // why the document is skipped

	// await names the DIG or logical cloud whose status is polled after a 2xx answer,
	// until it is one of want (the first is success, the others failures).
	await string
	want  []string
}

var (
	untilInstantiated = []string{"Instantiated", "InstantiateFailed", "UpdateFailed"}
	untilTerminated   = []string{"Terminated", "TerminateFailed"}
)

// actions are the anchor endings that name a lifecycle action rather than a collection
// (start and cancel: a workflow intent's or hook intent's workflow).
var actions = map[string]bool{"instantiate": true, "apply": true, "approve": true, "terminate": true,
	"migrate": true, "update": true, "rollback": true, "stop": true, "status": true, "start": true, "cancel": true}

// action returns the lifecycle action the document's anchor ends in, or "".
func (d *Document) action() string {
	p, _, _ := strings.Cut(d.anchor, "?") // status?status=deployed is still status
	if last := path.Base(strings.Trim(p, "/")); actions[last] {
		return last
	}
	return ""
}

// target is the resource an action's anchor acts on.
func (d *Document) target() string {
	p, _, _ := strings.Cut(d.anchor, "?")
	return path.Dir(strings.Trim(p, "/"))
}

// lifecycled says whether target has a lifecycle status to await: a DIG, or what other
// steps need first and is therefore always awaited (a logical cloud, a cluster's
// networks, a CA certificate intent's enrollment or distribution: a distribution needs
// its enrollment done).
func lifecycled(target string) (dig, prerequisite bool) {
	parent := path.Base(path.Dir(target))
	certStage := path.Base(path.Dir(path.Dir(target))) == "ca-certs" &&
		(path.Base(target) == "enrollment" || path.Base(target) == "distribution")
	return parent == "deployment-intent-groups", parent == "logical-clouds" || parent == "clusters" || certStage
}

// resourcePath is where update, delete and get find the document's own resource, as
// emcoctl addresses it: anchor/name (plus the version for a composite app), else
// anchor/label for a cluster label, else the anchor itself. A policy intent's anchor
// names the intent (EMCO posts it to its item, whatever metadata.name says): emcoctl's
// anchor/name finds nothing there, so temco uses the anchor.
func (d *Document) resourcePath() (string, error) {
	anchor := strings.TrimSuffix(d.anchor, "/")
	switch {
	case path.Base(path.Dir(anchor)) == "policy-intents":
		return anchor, nil
	case d.name != "" && path.Base(anchor) == "composite-apps":
		v, err := d.compositeAppVersion()
		return anchor + "/" + d.name + "/" + v, err
	case d.name != "":
		return anchor + "/" + d.name, nil
	case d.label != "":
		return anchor + "/" + d.label, nil
	}
	return anchor, nil
}

// compositeAppVersion reads spec.compositeAppVersion, whose key emcoctl matches in any
// case; older EMCO files call it spec.version.
func (d *Document) compositeAppVersion() (string, error) {
	for _, key := range []string{"compositeAppVersion", "version"} {
		for k, v := range d.spec {
			if !strings.EqualFold(k, key) {
				continue
			}
			if s, ok := v.(string); ok && s != "" {
				return s, nil
			}
			return "", fmt.Errorf("spec.%s of composite app %q is %v, not a version name", k, d.name, v)
		}
	}
	return "", fmt.Errorf("composite app %q has no spec.compositeAppVersion", d.name)
}

// planApply POSTs every document to its anchor, in order, actions included. A logical
// cloud's and a cluster's networks' operations are awaited (a DIG cannot deploy into a
// cloud, or attach to networks, still on their way); with wait, a DIG's too.
func planApply(docs []*Document, wait bool) []step {
	steps := make([]step, len(docs))
	for i, d := range docs {
		s := step{doc: d, method: http.MethodPost, path: d.anchor, send: true}
		if dig, prerequisite := lifecycled(d.target()); prerequisite || (dig && wait) {
			switch d.action() {
			case "instantiate", "apply", "update", "rollback":
				s.await, s.want = d.target(), untilInstantiated
			case "terminate":
				s.await, s.want = d.target(), untilTerminated
			}
		}
		steps[i] = s
	}
	return steps
}

// planUpdate PUTs every resource in order; actions are not resources and are skipped.
func planUpdate(docs []*Document) ([]step, error) {
	return planEach(docs, func(d *Document) (step, error) {
		if a := d.action(); a != "" {
			return step{skip: a + " is an action; update replaces resources only"}, nil
		}
		p, err := d.resourcePath()
		return step{method: http.MethodPut, path: p, send: true}, err
	})
}

// planDelete undoes the documents in reverse order: an instantiate or apply becomes a
// terminate of its target (awaited, so what it deployed is gone before its definitions
// are deleted), other actions are skipped, resources are deleted.
func planDelete(docs []*Document) ([]step, error) {
	rev := make([]*Document, len(docs))
	for i, d := range docs {
		rev[len(docs)-1-i] = d
	}
	return planEach(rev, func(d *Document) (step, error) {
		switch a := d.action(); a {
		case "":
			p, err := d.resourcePath()
			return step{method: http.MethodDelete, path: p}, err
		case "instantiate", "apply":
			s := step{method: http.MethodPost, path: d.target() + "/terminate"}
			if dig, prerequisite := lifecycled(d.target()); dig || prerequisite {
				s.await, s.want = d.target(), untilTerminated
			}
			return s, nil
		default:
			return step{skip: a + " is an action; delete undoes only instantiate and apply"}, nil
		}
	})
}

// planGet reads every resource, and status anchors themselves; other actions are skipped.
func planGet(docs []*Document) ([]step, error) {
	return planEach(docs, func(d *Document) (step, error) {
		switch a := d.action(); a {
		case "":
			p, err := d.resourcePath()
			return step{method: http.MethodGet, path: p}, err
		case "status":
			return step{method: http.MethodGet, path: d.anchor}, nil
		default:
			return step{skip: a + " is an action; get reads resources and status only"}, nil
		}
	})
}

// planEach plans each document with fn, naming the document in any error.
func planEach(docs []*Document, fn func(*Document) (step, error)) ([]step, error) {
	steps := make([]step, 0, len(docs))
	var errs []error
	for _, d := range docs {
		s, err := fn(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d (%s): %w", d.index, d.source, err))
			continue
		}
		s.doc = d
		steps = append(steps, s)
	}
	return steps, errors.Join(errs...)
}
