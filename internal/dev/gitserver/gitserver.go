// Package gitserver is the local stack's git server: Debian git's git-http-backend (real
// smart-HTTP git: clone, fetch, push) served through net/http/cgi behind basic auth. It
// stands for the GitHub or Gitea repository GitOps clusters pull from.
package gitserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Backend is Debian git's CGI program.
const Backend = "/usr/lib/git-core/git-http-backend"

// Server serves the bare repositories under Root at http://<Addr>/git/<name>.git.
type Server struct {
	Root  string
	Addr  string            // host:port; "127.0.0.1:0" picks a free port on Start
	Users map[string]string // user -> password: needed to push, and to fetch unless AnonymousRead
	// AnonymousRead lets clients fetch without credentials (EMCO's GitRepositories carry
	// no secretRef: its repositories must be readable anonymously).
	AnonymousRead bool

	mu  sync.Mutex
	srv *http.Server
	ln  net.Listener
}

// Start listens on Addr (keeping the port it got, so that a restart after Stop serves the
// same URLs) and serves until Stop.
func (s *Server) Start() error {
	if _, err := os.Stat(Backend); err != nil {
		return fmt.Errorf("git server: %s is missing: install Debian's git package", Backend)
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("git server: already started")
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("git server: %w", err)
	}
	s.Addr, s.ln = ln.Addr().String(), ln
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.srv = srv
	go func() { _ = srv.Serve(ln) }() // srv, not s.srv: a Stop right after may have cleared it
	return nil
}

// Stop closes the listener and every connection (a server that went down).
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	s.srv, s.ln = nil, nil
	return err
}

// URL is the clone URL of repository name.
func (s *Server) URL(name string) string { return "http://" + s.Addr + "/git/" + name + ".git" }

// Handler is the smart-HTTP handler with the authentication check.
func (s *Server) Handler() http.Handler {
	backend := &cgi.Handler{Path: Backend, Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1",
			// The backend refuses pushes from unauthenticated users unless told otherwise:
			// authentication is ours, in front of it.
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true"},
		InheritEnv: []string{"PATH", "HOME"}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		push := r.URL.Query().Get("service") == "git-receive-pack" || strings.HasSuffix(r.URL.Path, "/git-receive-pack")
		user, password, hasAuth := r.BasicAuth()
		if !(s.AnonymousRead && !push && !hasAuth) && !s.allowed(user, password, hasAuth) {
			w.Header().Set("WWW-Authenticate", `Basic realm="temco git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		if hasAuth {
			r = r.Clone(r.Context())
			r.Header.Set("Remote-User", user) // the backend's REMOTE_USER names the pusher in its logs
		}
		backend.ServeHTTP(w, r)
	})
}

func (s *Server) allowed(user, password string, hasAuth bool) bool {
	want, ok := s.Users[user]
	return hasAuth && ok && subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
}

// CreateRepo creates bare repository name with one commit on branch (holding a README), so
// that the branch exists for Flux and for clones; an existing repository is left alone.
func (s *Server) CreateRepo(ctx context.Context, name, branch string) error {
	dir := s.repoDir(name)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if _, err := git(ctx, "", nil, "init", "--quiet", "--bare", "-b", branch, dir); err != nil {
		return err
	}
	blob, err := git(ctx, dir, []byte("GitOps repository of the temco local stack.\n"), "hash-object", "-w", "--stdin")
	if err != nil {
		return err
	}
	tree, err := git(ctx, dir, []byte("100644 blob "+blob+"\tREADME.md\n"), "mktree")
	if err != nil {
		return err
	}
	commit, err := git(ctx, dir, nil, "-c", "user.name=temco", "-c", "user.email=temco@localhost",
		"commit-tree", tree, "-m", "Create the repository")
	if err != nil {
		return err
	}
	_, err = git(ctx, dir, nil, "update-ref", "refs/heads/"+branch, commit)
	return err
}

// Protect makes the repository refuse every push to branch (a protected branch), with the
// reason a hosted git service gives.
func (s *Server) Protect(name, branch string) error {
	hook := "#!/bin/sh\nwhile read old new ref; do\n" +
		"  if [ \"$ref\" = \"refs/heads/" + branch + "\" ]; then\n" +
		"    echo \"branch " + branch + " is protected: pushes are refused\" >&2; exit 1\n  fi\ndone\n"
	return os.WriteFile(filepath.Join(s.repoDir(name), "hooks", "pre-receive"), []byte(hook), 0o755)
}

// Unprotect removes the protection Protect added.
func (s *Server) Unprotect(name string) error {
	err := os.Remove(filepath.Join(s.repoDir(name), "hooks", "pre-receive"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Show returns a file's content at a revision (a branch name or commit), read with git itself.
func (s *Server) Show(ctx context.Context, name, rev, path string) ([]byte, error) {
	out, err := gitRaw(ctx, s.repoDir(name), nil, "show", rev+":"+path)
	return out, err
}

// Git runs a git command in repository name (tests read commits and trees with it).
func (s *Server) Git(ctx context.Context, name string, args ...string) (string, error) {
	return git(ctx, s.repoDir(name), nil, args...)
}

func (s *Server) repoDir(name string) string { return filepath.Join(s.Root, name+".git") }

func git(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	out, err := gitRaw(ctx, dir, stdin, args...)
	return strings.TrimSpace(string(out)), err
}

func gitRaw(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
