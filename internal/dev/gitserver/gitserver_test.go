package gitserver

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A real git client clones, pushes and is refused as a hosted server would.
func TestServesCloneAndPushWithAuth(t *testing.T) {
	ctx := context.Background()
	s := &Server{Root: t.TempDir(), Addr: "127.0.0.1:0", Users: map[string]string{"alice": "s3cret"}}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.CreateRepo(ctx, "gitops", "main"); err != nil {
		t.Fatal(err)
	}
	authed := strings.Replace(s.URL("gitops"), "http://", "http://alice:s3cret@", 1)
	work := filepath.Join(t.TempDir(), "w")
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "credential.helper="}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// git asks for a user name once the server answers 401.
	if out, err := run("", "clone", "-q", s.URL("gitops"), work); err == nil || !strings.Contains(out, "could not read Username") {
		t.Fatalf("clone without credentials: want 401, got err=%v %s", err, out)
	}
	if out, err := run("", "clone", "-q", authed, work); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	if out, err := run(work, "commit", "-q", "--allow-empty", "-m", "second"); err != nil {
		t.Fatal(out)
	}
	if out, err := run(work, "push", "-q", "origin", "main"); err != nil {
		t.Fatalf("push: %v %s", err, out)
	}
	if msg, err := s.Git(ctx, "gitops", "log", "-1", "--format=%s", "main"); err != nil || msg != "second" {
		t.Fatalf("server head: %q %v", msg, err)
	}
	if b, err := s.Show(ctx, "gitops", "main", "README.md"); err != nil || len(b) == 0 {
		t.Fatalf("seeded README: %q %v", b, err)
	}

	if err := s.Protect("gitops", "main"); err != nil {
		t.Fatal(err)
	}
	run(work, "commit", "-q", "--allow-empty", "-m", "third")
	if out, err := run(work, "push", "-q", "origin", "main"); err == nil || !strings.Contains(out, "protected") {
		t.Fatalf("push to a protected branch: want refused, got err=%v %s", err, out)
	}

	// Down, then up again on the same address.
	s.Stop()
	if _, err := run(work, "fetch", "-q", "origin"); err == nil {
		t.Fatal("fetch from a stopped server succeeded")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := run(work, "fetch", "-q", "origin"); err != nil {
		t.Fatalf("fetch after restart: %v %s", err, out)
	}
}

func TestAnonymousReadStillNeedsAuthToPush(t *testing.T) {
	ctx := context.Background()
	s := &Server{Root: t.TempDir(), Addr: "127.0.0.1:0", Users: map[string]string{"alice": "s3cret"}, AnonymousRead: true}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.CreateRepo(ctx, "r", "main"); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "w")
	cmd := exec.Command("git", "clone", "-q", s.URL("r"), work)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("anonymous clone: %v %s", err, out)
	}
	cmd = exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
	cmd.Dir = work
	cmd.CombinedOutput()
	cmd = exec.Command("git", "-c", "credential.helper=", "push", "-q", "origin", "main")
	cmd.Dir, cmd.Env = work, append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("anonymous push accepted: %s", out)
	}
}
