package gitops

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/mail"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Writer commits to git repositories over HTTP(S). It keeps one bare clone per repository
// URL under Dir and serialises the work on each clone, so one Writer serves all the
// activities of a worker process; Writers of other processes (other workers, with their
// own Dir) writing the same branch are handled by rebuilding a change whose push lost the
// race. Use one Writer per Dir.
type Writer struct {
	Dir string
	// Author signs the commits, "Name <email>"; empty: DefaultAuthor.
	Author string
	// Attempts and Patience bound how often and how long a change is rebuilt on a head
	// that moved under it: it gives up once both are spent (0: DefaultAttempts,
	// DefaultPatience). The time matters on a busy machine: the writer that lost must
	// fetch the new head before it tries again, while the one that won need not, so a
	// writer committing back to back can win ten races in a row.
	Attempts int
	Patience time.Duration

	mu     sync.Mutex
	clones map[string]*clone
}

const (
	DefaultAuthor   = "temco <temco@temco.local>"
	DefaultAttempts = 10
	DefaultPatience = time.Minute
)

var backoffStep, maxBackoff = 50 * time.Millisecond, 5 * time.Second

// Result is the outcome of a Commit.
type Result struct {
	Commit  string // the branch head holding the change ("" when the branch is absent and stays so)
	Changed bool   // false: the tree already matched, no commit was made
}

// clone is the local bare clone of one repository; lock (a one-slot semaphore, so that a
// waiter can give up with its context) guards it.
type clone struct {
	lock chan struct{}
	repo *git.Repository
}

const remoteName = "origin"

// Commit writes c onto r's branch as one commit, pushed without force. It fetches the
// branch, edits the fetched tree (only the directories c touches are read and rewritten:
// no work tree is checked out), and pushes; when another writer moved the branch in the
// meantime it starts again from the new head, up to Attempts times. An unchanged tree
// makes no commit.
func (w *Writer) Commit(ctx context.Context, r Remote, c Change) (Result, error) {
	r, err := r.normalized()
	if err != nil {
		return Result{}, err
	}
	edit, err := plan(c)
	if err != nil {
		return Result{}, err
	}
	var res Result
	err = w.withClone(ctx, r, func(cl *clone) (err error) {
		res, err = w.commit(ctx, cl, r, c, edit)
		return err
	})
	return res, safeError(err, r.Token)
}

func (w *Writer) commit(ctx context.Context, cl *clone, r Remote, c Change, edit *dirEdit) (Result, error) {
	attempts, patience := cmp.Or(w.Attempts, DefaultAttempts), cmp.Or(w.Patience, DefaultPatience)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		res, done, err := w.attempt(ctx, cl, r, c, edit)
		if done || err != nil {
			return res, err
		}
		if spent := time.Since(start); attempt >= attempts && spent >= patience {
			return Result{}, fmt.Errorf("git push to %s: the branch kept moving, gave up after %d attempts in %s", r, attempt, spent.Round(time.Second))
		}
		if err := backoff(ctx, attempt); err != nil {
			return Result{}, err
		}
	}
}

// attempt builds the change on the branch head the server advertises and pushes it in the
// same receive-pack session, so that another writer can only slip in while the tree is
// built (milliseconds), not during a whole fetch. done is false when the branch moved all
// the same.
func (w *Writer) attempt(ctx context.Context, cl *clone, r Remote, c Change, edit *dirEdit) (res Result, done bool, err error) {
	sess, head, err := cl.receivePack(ctx, r)
	if err != nil {
		return Result{}, false, err
	}
	defer sess.Close()
	if !head.IsZero() && cl.repo.Storer.HasEncodedObject(head) != nil {
		fetched, err := cl.fetch(ctx, r)
		if err != nil || fetched != head {
			return Result{}, false, err
		}
	}
	if head.IsZero() && !c.CreateBranch {
		return Result{}, false, &RejectedError{URL: r.URL, Branch: r.Branch, Reason: "the branch does not exist"}
	}
	commit, objects, err := w.build(cl, head, c.Message, edit)
	if err != nil {
		return Result{}, false, err
	}
	if commit.IsZero() {
		return Result{Commit: hashString(head)}, true, nil
	}
	refusal, err := cl.push(ctx, sess, r, head, commit, objects)
	if err != nil || refusal == "" {
		return Result{Commit: commit.String(), Changed: true}, err == nil, err
	}
	// A refusal of the ref update is final only if the branch did not move: a concurrent
	// push also makes the server refuse ours.
	now, err := cl.fetch(ctx, r)
	if err != nil {
		return Result{}, false, err
	}
	if now == head && lockHeld(refusal) {
		// Another receive-pack holds the branch's lock file (one still running, or one whose
		// server died under it): it refuses us for now, not for good.
		return Result{}, false, fmt.Errorf("git push to %s: the branch is locked by another push: %s", r, redact(refusal, r.Token))
	}
	if now == head {
		return Result{}, false, &RejectedError{URL: r.URL, Branch: r.Branch, Reason: "push refused: " + redact(refusal, r.Token)}
	}
	return Result{}, false, nil
}

// lockHeld tells git's refusal of a ref whose lock file another process holds.
func lockHeld(refusal string) bool {
	return strings.Contains(refusal, "cannot lock ref") && strings.Contains(refusal, ".lock': File exists")
}

// build writes the edited tree and its commit on head; zero when the tree is unchanged
// (or a missing branch would be created empty).
func (w *Writer) build(cl *clone, head plumbing.Hash, message string, edit *dirEdit) (plumbing.Hash, []plumbing.Hash, error) {
	s := cl.repo.Storer
	var baseTree plumbing.Hash
	if !head.IsZero() {
		hc, err := object.GetCommit(s, head)
		if err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("read commit %s: %w", head, err)
		}
		baseTree = hc.TreeHash
	}
	b := &treeBuilder{s: s}
	tree, err := b.apply(edit, baseTree)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if tree == baseTree {
		return plumbing.ZeroHash, nil, nil
	}
	if tree.IsZero() { // every file removed: git's empty tree
		t := &object.Tree{}
		obj := s.NewEncodedObject()
		if err := t.Encode(obj); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if tree, err = s.SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		b.new = append(b.new, tree)
	}
	sig := w.signature(time.Now())
	commit := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree}
	if !head.IsZero() {
		commit.ParentHashes = []plumbing.Hash{head}
	}
	obj := s.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	h, err := s.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return h, unique(append(b.new, h)), nil
}

func (w *Writer) signature(when time.Time) object.Signature {
	author := w.Author
	if author == "" {
		author = DefaultAuthor
	}
	if a, err := mail.ParseAddress(author); err == nil {
		return object.Signature{Name: a.Name, Email: a.Address, When: when}
	}
	return object.Signature{Name: author, When: when}
}

// backoff waits before attempt+1 a random time that doubles with the attempts (up to
// maxBackoff): a writer that keeps losing to one pushing back to back needs a wait long
// enough for that burst to end, and the randomness breaks the lockstep of two retrying
// writers. Ten attempts wait about ten seconds in all; past that the activity's own
// retry takes over.
func backoff(ctx context.Context, attempt int) error {
	d := rand.N(min(backoffStep<<attempt, maxBackoff))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// withClone calls fn with the clone of r's repository, held for the call. A clone found
// damaged (a process killed while it wrote a ref or an object leaves the file empty or cut
// short) is only a cache: it is made again from nothing and fn called once more.
func (w *Writer) withClone(ctx context.Context, r Remote, fn func(*clone) error) error {
	cl, release, err := w.acquire(ctx, r)
	if err != nil {
		return err
	}
	defer release()
	err = fn(cl)
	if !damaged(err) {
		return err
	}
	dir := filepath.Join(w.Dir, cloneDirName(r.URL))
	if rerr := os.RemoveAll(dir); rerr != nil {
		return errors.Join(err, rerr)
	}
	if cl.repo, err = openClone(dir, r.URL); err != nil {
		cl.repo = nil
		return fmt.Errorf("local clone of %s: %w", r.URL, err)
	}
	return fn(cl)
}

// damaged tells the errors of an unreadable ref or object (go-git's packfile errors, zlib's
// among them, carry their details in a new value, so they are matched by type).
func damaged(err error) bool {
	var pe *packfile.Error
	return errors.Is(err, dotgit.ErrEmptyRefFile) || errors.As(err, &pe) || errors.Is(err, io.ErrUnexpectedEOF)
}

// acquire opens (creating it if need be) the clone of r's repository and holds it until
// release is called.
func (w *Writer) acquire(ctx context.Context, r Remote) (*clone, func(), error) {
	w.mu.Lock()
	if w.clones == nil {
		w.clones = map[string]*clone{}
	}
	cl := w.clones[r.URL]
	if cl == nil {
		cl = &clone{lock: make(chan struct{}, 1)}
		w.clones[r.URL] = cl
	}
	w.mu.Unlock()
	select {
	case cl.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	release := func() { <-cl.lock }
	if cl.repo == nil {
		repo, err := openClone(filepath.Join(w.Dir, cloneDirName(r.URL)), r.URL)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("local clone of %s: %w", r.URL, err)
		}
		cl.repo = repo
	}
	return cl, release, nil
}

// openClone opens the bare clone in dir, or makes a new one when it is missing or
// unreadable (the cache can always be fetched again).
func openClone(dir, url string) (*git.Repository, error) {
	repo, err := git.PlainOpen(dir)
	if err == nil {
		if _, rerr := repo.Remote(remoteName); rerr == nil {
			return repo, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if repo, err = git.PlainInit(dir, true); err != nil {
		return nil, err
	}
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{url}})
	return repo, err
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// cloneDirName is a readable and unique directory name for a repository URL.
func cloneDirName(url string) string {
	sum := sha256.Sum256([]byte(url))
	return unsafeChars.ReplaceAllString(path.Base(url), "_") + "-" + hex.EncodeToString(sum[:8])
}

func trackingRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remoteName, branch)
}

// fetch brings r's branch into the clone and returns its head; zero when the branch (or
// the whole repository) is empty on the server.
func (cl *clone) fetch(ctx context.Context, r Remote) (plumbing.Hash, error) {
	track := trackingRef(r.Branch)
	err := cl.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName, RemoteURL: r.URL, Auth: r.auth(), Tags: git.NoTags, Force: true,
		RefSpecs: []config.RefSpec{config.RefSpec("+" + plumbing.NewBranchReferenceName(r.Branch).String() + ":" + track.String())},
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, git.NoMatchingRefSpecError{}), errors.Is(err, transport.ErrEmptyRemoteRepository):
		if rerr := cl.repo.Storer.RemoveReference(track); rerr != nil {
			return plumbing.ZeroHash, rerr
		}
		return plumbing.ZeroHash, nil
	default:
		return plumbing.ZeroHash, classify("fetch", r, err)
	}
	ref, err := cl.repo.Storer.Reference(track)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git fetch %s: %w", r, err)
	}
	return ref.Hash(), nil
}

func hashString(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

func unique(hs []plumbing.Hash) []plumbing.Hash {
	seen := make(map[plumbing.Hash]bool, len(hs))
	out := hs[:0]
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}
