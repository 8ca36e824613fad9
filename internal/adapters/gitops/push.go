package gitops

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// receivePack opens a push session to r and returns it with the branch's head on the
// server (zero when the branch is absent).
func (cl *clone) receivePack(ctx context.Context, r Remote) (*pushSession, plumbing.Hash, error) {
	ep, err := transport.NewEndpoint(r.URL)
	if err != nil {
		return nil, plumbing.ZeroHash, classify("push", r, plumbing.NewPermanentError(err))
	}
	t, err := client.NewClient(ep)
	if err != nil {
		return nil, plumbing.ZeroHash, classify("push", r, plumbing.NewPermanentError(err))
	}
	sess, err := t.NewReceivePackSession(ep, r.auth())
	if err != nil {
		return nil, plumbing.ZeroHash, classify("push", r, err)
	}
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		sess.Close()
		return nil, plumbing.ZeroHash, classify("push", r, err)
	}
	refs, err := adv.AllReferences()
	if err != nil {
		sess.Close()
		return nil, plumbing.ZeroHash, classify("push", r, err)
	}
	var head plumbing.Hash
	if ref, err := refs.Reference(plumbing.NewBranchReferenceName(r.Branch)); err == nil {
		head = ref.Hash()
	}
	return &pushSession{ReceivePackSession: sess, adv: adv}, head, nil
}

type pushSession struct {
	transport.ReceivePackSession
	adv *packp.AdvRefs
}

// push updates r's branch from parent (zero: create it) to commit, sending objects (what
// parent lacks), in sess. It speaks receive-pack itself, rather than through go-git's
// Push, for two reasons: go-git walks the whole history to find what to send, which we
// know already; and it hides the server's per-ref status, which says why a push was
// refused.
//
// It returns the server's reason (with what its hooks printed) when it refused the
// update, or a transport error.
func (cl *clone) push(ctx context.Context, sess *pushSession, r Remote, parent, commit plumbing.Hash, objects []plumbing.Hash) (string, error) {
	name := plumbing.NewBranchReferenceName(r.Branch)
	adv := sess.adv
	var pack bytes.Buffer
	if _, err := packfile.NewEncoder(&pack, cl.repo.Storer, false).Encode(objects, 10); err != nil {
		return "", fmt.Errorf("pack the commit for %s: %w", r, err)
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	req.Commands = []*packp.Command{{Name: name, Old: parent, New: commit}}
	req.Packfile = io.NopCloser(&pack)
	var remoteOut bytes.Buffer // what the server's hooks print
	for _, sb := range []capability.Capability{capability.Sideband64k, capability.Sideband} {
		if adv.Capabilities.Supports(sb) {
			_ = req.Capabilities.Set(sb)
			req.Progress = &remoteOut
			break
		}
	}
	report, err := sess.ReceivePack(ctx, req)
	if report != nil {
		if report.UnpackStatus != "ok" {
			return "", fmt.Errorf("git push to %s: the server could not unpack: %s", r, report.UnpackStatus)
		}
		for _, cs := range report.CommandStatuses {
			if cs.Status != "ok" {
				return refusalReason(cs.Status, remoteOut.String()), nil
			}
		}
		err = nil
	}
	if err != nil {
		return "", classify("push", r, err)
	}
	return "", cl.repo.Storer.SetReference(plumbing.NewHashReference(trackingRef(r.Branch), commit))
}

// refusalReason joins the server's status for the ref with the lines its hooks printed.
func refusalReason(status, remote string) string {
	var lines []string
	for _, l := range strings.FieldsFunc(remote, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return status
	}
	return status + ": " + strings.Join(lines, "; ")
}
