package gitops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/gitserver"
)

const (
	user  = "temco"
	token = "tok-3f9a1c77e2b54d08"
)

// server starts a real git server holding repository "gitops" with branch main.
func server(t testing.TB) (*gitserver.Server, Remote) {
	t.Helper()
	s := &gitserver.Server{Root: t.TempDir(), Addr: "127.0.0.1:0", Users: map[string]string{user: token}}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if err := s.CreateRepo(context.Background(), "gitops", "main"); err != nil {
		t.Fatal(err)
	}
	return s, Remote{URL: s.URL("gitops"), Branch: "main", User: user, Token: token}
}

func serverGit(t testing.TB, s *gitserver.Server, args ...string) string {
	t.Helper()
	out, err := s.Git(context.Background(), "gitops", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func noToken(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), token) {
		t.Fatalf("the error shows the token: %v", err)
	}
}

func TestCommitWritesTheChangeAndReadsItBack(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	w := &Writer{Dir: t.TempDir(), Author: "temco worker <worker@temco.test>"}
	dir := "clusters/p1+c1/context/42/"
	// Names that git sorts differently from plain byte order: a file "a.yaml", and
	// directories "a" and "a0" (git compares a directory as "a/").
	files := map[string][]byte{
		dir + "app/web/web+Deployment.yaml": []byte(`{"kind":"Deployment"}`),
		dir + "a.yaml":                      []byte("1"),
		dir + "a/x.yaml":                    []byte("2"),
		dir + "a0/y.yaml":                   []byte("3"),
		"clusters/p1+c1/kust42.yaml":        []byte("kind: Kustomization\n"),
	}
	res, err := w.Commit(ctx, r, Change{Files: files, Message: "deploy 42 to p1+c1"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Commit != serverGit(t, s, "rev-parse", "main") {
		t.Fatalf("result %+v, server head %s", res, serverGit(t, s, "rev-parse", "main"))
	}
	// git itself checks the trees we built (entry order, modes) and the history.
	serverGit(t, s, "fsck", "--strict", "--no-dangling")
	if got := serverGit(t, s, "log", "-1", "--format=%an <%ae>|%s", "main"); got != "temco worker <worker@temco.test>|deploy 42 to p1+c1" {
		t.Errorf("commit author and message: %q", got)
	}
	if got := serverGit(t, s, "show", "main:README.md"); !strings.Contains(got, "GitOps repository") {
		t.Errorf("the seeded README was lost: %q", got)
	}
	for p, want := range files {
		if got, err := s.Show(ctx, "gitops", "main", p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("server %s: %q %v", p, got, err)
		}
	}

	reader := &Writer{Dir: t.TempDir()} // another worker
	got, head, err := reader.ReadFile(ctx, r, dir+"a/x.yaml")
	if err != nil || string(got) != "2" || head != res.Commit {
		t.Errorf("ReadFile: %q at %s, %v", got, head, err)
	}
	if got, head, err := reader.ReadFile(ctx, r, dir+"missing.yaml"); err != nil || got != nil || head != res.Commit {
		t.Errorf("ReadFile of a missing file: %q at %s, %v", got, head, err)
	}
	all, _, err := reader.ReadDir(ctx, r, dir)
	if err != nil || len(all) != 4 || string(all["app/web/web+Deployment.yaml"]) != `{"kind":"Deployment"}` {
		t.Errorf("ReadDir: %v %v", all, err)
	}
	if none, _, err := reader.ReadDir(ctx, r, "clusters/nowhere"); err != nil || len(none) != 0 {
		t.Errorf("ReadDir of a missing directory: %v %v", none, err)
	}
}

func TestReplaceDropsWhatTheChangeNoLongerHolds(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	v1 := Change{Message: "v1", Replace: []string{"clusters/c/context/1/", "clusters/c/kust1.yaml"}, Files: map[string][]byte{
		"clusters/c/context/1/app/a/x+ConfigMap.yaml": []byte("x1"),
		"clusters/c/context/1/app/a/y+ConfigMap.yaml": []byte("y1"),
		"clusters/c/context/2/app/b/z+ConfigMap.yaml": []byte("other deployment"),
		"clusters/c/kust1.yaml":                       []byte("k"),
	}}
	if _, err := w.Commit(ctx, r, v1); err != nil {
		t.Fatal(err)
	}
	v2 := Change{Message: "v2", Replace: []string{"clusters/c/context/1/", "clusters/c/kust1.yaml"}, Files: map[string][]byte{
		"clusters/c/context/1/app/a/x+ConfigMap.yaml": []byte("x2"),
	}}
	if _, err := w.Commit(ctx, r, v2); err != nil {
		t.Fatal(err)
	}
	got := serverGit(t, s, "ls-tree", "-r", "--name-only", "main", "clusters/c")
	want := "clusters/c/context/1/app/a/x+ConfigMap.yaml\nclusters/c/context/2/app/b/z+ConfigMap.yaml"
	if got != want {
		t.Errorf("files after the update:\n%s\nwant\n%s", got, want)
	}
	// Dropping everything under a directory removes the directory (git holds no empty ones).
	if _, err := w.Commit(ctx, r, Change{Message: "terminate 1", Replace: []string{"clusters/c/context/1"}}); err != nil {
		t.Fatal(err)
	}
	if got := serverGit(t, s, "ls-tree", "-d", "--name-only", "main", "clusters/c/context/"); got != "clusters/c/context/2" {
		t.Errorf("directories after terminate: %q", got)
	}
	serverGit(t, s, "fsck", "--strict", "--no-dangling")
}

func TestUnchangedTreeMakesNoCommit(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	c := Change{Message: "m", Replace: []string{"clusters/c/context/7/"}, Files: map[string][]byte{"clusters/c/context/7/f.yaml": []byte("same")}}
	first, err := w.Commit(ctx, r, c)
	if err != nil || !first.Changed {
		t.Fatalf("first commit: %+v %v", first, err)
	}
	again, err := (&Writer{Dir: t.TempDir()}).Commit(ctx, r, c)
	if err != nil || again.Changed || again.Commit != first.Commit {
		t.Fatalf("same change again: %+v %v (first %s)", again, err, first.Commit)
	}
	if n := serverGit(t, s, "rev-list", "--count", "main"); n != "2" {
		t.Errorf("%s commits on main, want 2", n)
	}
}

// Two workers (Writers with their own clones), each running two activities at once, write
// their own directories: every commit lands.
func TestConcurrentWritersLoseNoCommit(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	const perWriter = 20
	workers := []*Writer{{Dir: t.TempDir()}, {Dir: t.TempDir()}}
	var wg sync.WaitGroup
	errs := make(chan error, 4*perWriter)
	for wi, w := range workers {
		for g := range 2 {
			wg.Go(func() {
				for i := range perWriter {
					p := fmt.Sprintf("clusters/w%d-g%d/context/%d/f.yaml", wi, g, i)
					res, err := w.Commit(ctx, r, Change{Message: p, Files: map[string][]byte{p: []byte(p)}})
					if err == nil && !res.Changed {
						err = fmt.Errorf("%s: no commit made", p)
					}
					if err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := serverGit(t, s, "rev-list", "--count", "main"); n != fmt.Sprint(1+4*perWriter) {
		t.Errorf("%s commits on main, want %d", n, 1+4*perWriter)
	}
	files := strings.Split(serverGit(t, s, "ls-tree", "-r", "--name-only", "main", "clusters"), "\n")
	if len(files) != 4*perWriter {
		t.Errorf("%d files on main, want %d", len(files), 4*perWriter)
	}
}

func TestProtectedBranchIsAPermanentRefusal(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	before := serverGit(t, s, "rev-parse", "main")
	if err := s.Protect("gitops", "main"); err != nil {
		t.Fatal(err)
	}
	refused := Change{Message: "refused", Files: map[string][]byte{"clusters/c/refused.yaml": []byte("no")}}
	_, err := w.Commit(ctx, r, refused)
	var rej *RejectedError
	if !IsPermanent(err) || !errors.As(err, &rej) || !strings.Contains(err.Error(), "protected") {
		t.Fatalf("push to a protected branch: want a permanent refusal naming the protection, got %v", err)
	}
	noToken(t, err)
	if after := serverGit(t, s, "rev-parse", "main"); after != before {
		t.Fatalf("the refused push moved main from %s to %s", before, after)
	}

	// Once the branch is open again, the next commit carries its own change only: the
	// refused commit, still in the local clone, is not pushed with it.
	if err := s.Unprotect("gitops"); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx, r, Change{Message: "accepted", Files: map[string][]byte{"clusters/c/ok.yaml": []byte("yes")}})
	if err != nil {
		t.Fatal(err)
	}
	if parent := serverGit(t, s, "rev-parse", res.Commit+"^"); parent != before {
		t.Errorf("the accepted commit's parent is %s, want %s", parent, before)
	}
	if files := serverGit(t, s, "ls-tree", "-r", "--name-only", "main", "clusters"); files != "clusters/c/ok.yaml" {
		t.Errorf("files on main: %q", files)
	}
}

func TestBadTokenIsAPermanentRefusal(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	before := serverGit(t, s, "rev-parse", "main")
	bad := r
	bad.Token = "wrong-" + token // an error echoing it would also show the real token
	_, err := (&Writer{Dir: t.TempDir()}).Commit(ctx, bad, Change{Message: "m", Files: map[string][]byte{"f": []byte("x")}})
	if !IsPermanent(err) || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("bad token: want a permanent authentication refusal, got %v", err)
	}
	noToken(t, err)
	if after := serverGit(t, s, "rev-parse", "main"); after != before {
		t.Fatalf("main moved from %s to %s", before, after)
	}
}

func TestMissingBranchIsCreatedOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	status := r
	status.Branch = "provider1+cluster1" // EMCO's status branch: the cluster's name, '+' and all
	if data, head, err := w.ReadFile(ctx, status, "x"); err != nil || data != nil || head != "" {
		t.Fatalf("read from a missing branch: %q %q %v", data, head, err)
	}
	c := Change{Message: "status", Files: map[string][]byte{"clusters/provider1+cluster1/status/ns/k.json": []byte("{}")}}
	if _, err := w.Commit(ctx, status, c); !IsPermanent(err) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("commit to a missing branch: want a permanent refusal, got %v", err)
	}
	c.CreateBranch = true
	res, err := w.Commit(ctx, status, c)
	if err != nil || !res.Changed {
		t.Fatalf("create the branch: %+v %v", res, err)
	}
	// Created from an empty tree: one parentless commit holding the change only.
	if got := serverGit(t, s, "rev-list", "--parents", "provider1+cluster1"); got != res.Commit {
		t.Errorf("history of the new branch: %q", got)
	}
	if got := serverGit(t, s, "ls-tree", "-r", "--name-only", "provider1+cluster1"); got != "clusters/provider1+cluster1/status/ns/k.json" {
		t.Errorf("files of the new branch: %q", got)
	}
}

func TestServerDownIsTransientAndTheSameCommitSucceedsLater(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	if _, err := w.Commit(ctx, r, Change{Message: "warm", Files: map[string][]byte{"a": []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	c := Change{Message: "while down", Files: map[string][]byte{"b": []byte("b")}}
	_, err := w.Commit(ctx, r, c)
	if err == nil || IsPermanent(err) {
		t.Fatalf("server down: want a transient error, got %v", err)
	}
	noToken(t, err)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx, r, c)
	if err != nil || !res.Changed {
		t.Fatalf("after restart: %+v %v", res, err)
	}
	if got, err := s.Show(ctx, "gitops", "main", "b"); err != nil || string(got) != "b" {
		t.Errorf("file b on the server: %q %v", got, err)
	}
}

func TestContainsFollowsHistory(t *testing.T) {
	ctx := context.Background()
	_, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	c1, err := w.Commit(ctx, r, Change{Message: "1", Files: map[string][]byte{"f": []byte("1")}})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := w.Commit(ctx, r, Change{Message: "2", Files: map[string][]byte{"f": []byte("2")}})
	if err != nil {
		t.Fatal(err)
	}
	other := &Writer{Dir: t.TempDir()} // knows neither commit: it fetches
	for _, tc := range []struct {
		w                    *Writer
		ancestor, descendant string
		want                 bool
	}{
		{other, c1.Commit, "main@sha1:" + c2.Commit, true},
		{w, c1.Commit, "main@sha1:" + c2.Commit, true},
		{w, c2.Commit, c2.Commit, true},
		{w, c2.Commit, "main@sha1:" + c1.Commit, false},
		{w, "sha1:" + c1.Commit, "main/" + c2.Commit, true},
		{w, strings.Repeat("ab", 20), c2.Commit, false}, // not on the branch
	} {
		got, err := tc.w.Contains(ctx, r, tc.ancestor, tc.descendant)
		if err != nil || got != tc.want {
			t.Errorf("Contains(%s, %s) = %v, %v; want %v", tc.ancestor, tc.descendant, got, err, tc.want)
		}
	}
	if _, err := w.Contains(ctx, r, "main", c1.Commit); !errors.Is(err, ErrInvalidRevision) || !IsPermanent(err) {
		t.Errorf("a branch name as revision: %v", err)
	}
}

func TestInvalidPathsArePermanent(t *testing.T) {
	_, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	for _, c := range []Change{
		{Files: map[string][]byte{"../escape": nil}},
		{Files: map[string][]byte{"/abs": nil}},
		{Files: map[string][]byte{"a/.git/config": nil}},
		{Files: map[string][]byte{"a//b": nil}},
		{Replace: []string{""}},
		{Files: map[string][]byte{"a/b": nil, "a/b/c": nil}},
	} {
		if _, err := w.Commit(context.Background(), r, c); !errors.Is(err, ErrInvalidChange) || !IsPermanent(err) {
			t.Errorf("%v: want an invalid change, got %v", c, err)
		}
	}
}

func TestRemoteNeverShowsItsToken(t *testing.T) {
	r := Remote{URL: "https://alice:" + token + "@git.example.com/org/gitops.git", Branch: "main", User: "alice", Token: token}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("commit", "remote", r)
	for _, s := range []string{r.String(), fmt.Sprintf("%v", r), fmt.Sprintf("%+v", r), fmt.Sprintf("%#v", r), fmt.Sprintf("%s", r), logged.String()} {
		if strings.Contains(s, token) {
			t.Errorf("token shown: %s", s)
		}
		if !strings.Contains(s, "git.example.com/org/gitops.git") {
			t.Errorf("remote not named: %s", s)
		}
	}
	n, err := r.normalized()
	if err != nil || n.URL != "https://git.example.com/org/gitops.git" || n.Token != token {
		t.Errorf("normalized: %v %v", n.URL, err)
	}
	rej := classify("push", n, errors.New("server said "+token))
	if strings.Contains(rej.Error(), token) {
		t.Errorf("classified error shows the token: %v", rej)
	}
	if b, _ := json.Marshal(&RejectedError{URL: n.URL, Reason: "x"}); strings.Contains(string(b), token) {
		t.Errorf("RejectedError holds the token: %s", b)
	}
}

// The writer waits for its clone with the caller's context.
func TestCommitGivesUpWaitingWhenCancelled(t *testing.T) {
	_, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	n, _ := r.normalized()
	_, release, err := w.acquire(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := w.Commit(ctx, r, Change{Files: map[string][]byte{"f": nil}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit while the clone is held: %v", err)
	}
}

// A ref lock another push holds (a receive-pack still running, or one whose server was
// killed under it and not yet gone) refuses our push for now, not for good: the chaos run
// failed a terminate on it.
func TestALockedBranchIsTransient(t *testing.T) {
	ctx := context.Background()
	s, r := server(t)
	lock := filepath.Join(s.Root, "gitops.git", "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := &Writer{Dir: t.TempDir(), Author: "temco worker <worker@temco.test>", Attempts: 2, Patience: time.Millisecond}
	change := Change{Files: map[string][]byte{"clusters/p1+c1/a.yaml": []byte("1")}, Message: "deploy"}
	_, err := w.Commit(ctx, r, change)
	if err == nil || IsPermanent(err) {
		t.Fatalf("a push refused on a held lock: %v (permanent %v), want a transient error", err, IsPermanent(err))
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Commit(ctx, r, change); err != nil || !res.Changed {
		t.Fatalf("once the lock is gone: %+v %v", res, err)
	}
}

// SameAt compares what paths hold, not commits: a later commit elsewhere keeps an older
// revision the same for them, a change below one of them does not.
func TestSameAtComparesThePathsAtBothRevisions(t *testing.T) {
	ctx := context.Background()
	_, r := server(t)
	w := &Writer{Dir: t.TempDir()}
	commit := func(files map[string][]byte) string {
		t.Helper()
		res, err := w.Commit(ctx, r, Change{Message: "c", Files: files})
		if err != nil {
			t.Fatal(err)
		}
		return res.Commit
	}
	mine := []string{"clusters/c/context/1/", "clusters/c/kust1.yaml"}
	before := commit(map[string][]byte{"other": []byte("0")})
	first := commit(map[string][]byte{"clusters/c/context/1/app/a/x": []byte("1"), "clusters/c/kust1.yaml": []byte("k")})
	elsewhere := commit(map[string][]byte{"clusters/c/context/2/app/b/y": []byte("2")})
	other := &Writer{Dir: t.TempDir()} // knows no commit: it fetches
	for _, tc := range []struct {
		name, rev string
		want      bool
	}{
		{"the head", elsewhere, true},
		{"before a commit elsewhere", "main@sha1:" + first, true},
		{"before the paths were written", before, false},
		{"not on the branch", strings.Repeat("ab", 20), false},
	} {
		for _, wr := range []*Writer{w, other} {
			if got, err := wr.SameAt(ctx, r, tc.rev, mine); err != nil || got != tc.want {
				t.Errorf("%s: SameAt = %v, %v; want %v", tc.name, got, err, tc.want)
			}
		}
	}
	commit(map[string][]byte{"clusters/c/context/1/app/a/x": []byte("changed")})
	if same, err := w.SameAt(ctx, r, first, mine); err != nil || same {
		t.Errorf("after a change below a path: SameAt = %v, %v; want false", same, err)
	}
	if same, err := w.SameAt(ctx, r, before, []string{"nothing/here"}); err != nil || !same {
		t.Errorf("a path absent at both: SameAt = %v, %v; want true", same, err)
	}
}
