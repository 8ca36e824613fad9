package gitops

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// RejectedError is a permanent refusal by the git server: bad credentials, no such
// repository or branch, a push refused by a hook or a protected branch. Trying again
// changes nothing until someone changes the configuration or the server.
type RejectedError struct {
	URL, Branch string // the URL without credentials
	Reason      string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("git %s branch %s: refused: %s", e.URL, e.Branch, e.Reason)
}

var (
	// ErrInvalidChange marks a Change this package cannot write (a bad path).
	ErrInvalidChange = errors.New("invalid change")
	// ErrInvalidRevision marks a revision that names no commit.
	ErrInvalidRevision = errors.New("not a commit revision")
)

// IsPermanent reports whether err will recur however often the call is repeated: a
// refusal by the server (*RejectedError), an invalid change or revision. Other errors (network,
// server errors, a cancelled context) are transient.
func IsPermanent(err error) bool {
	var rej *RejectedError
	return errors.As(err, &rej) || errors.Is(err, ErrInvalidChange) || errors.Is(err, ErrInvalidRevision)
}

// classify turns a transport error of op on r into a RejectedError when the server's answer
// is final, or a transient error with context; the token never appears in either.
func classify(op string, r Remote, err error) error {
	if err == nil {
		return nil
	}
	reject := func(reason string) error { return &RejectedError{URL: r.URL, Branch: r.Branch, Reason: reason} }
	var perm *plumbing.PermanentError
	if errors.As(err, &perm) {
		return reject(redact(perm.Err.Error(), r.Token))
	}
	// go-git wraps network and HTTP errors in an UnexpectedError that does not unwrap.
	var unexpected *plumbing.UnexpectedError
	if errors.As(err, &unexpected) {
		err = unexpected.Err
	}
	var httpErr *githttp.Err
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return reject("authentication failed (HTTP 401): check the user name and token")
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return reject("access denied (HTTP 403): the token may not write this repository")
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return reject("repository not found (HTTP 404)")
	case errors.Is(err, transport.ErrInvalidAuthMethod), errors.Is(err, transport.ErrEmptyUploadPackRequest):
		return reject(redact(err.Error(), r.Token))
	case errors.As(err, &httpErr):
		code := httpErr.StatusCode()
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests {
			return reject(fmt.Sprintf("HTTP %d", code))
		}
	}
	return safeError(fmt.Errorf("git %s %s: %w", op, r, err), r.Token)
}

// safeError returns err unless its message shows token; then an error with the token
// masked, which still answers errors.Is for what err wraps (context.Canceled...).
func safeError(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	var rej *RejectedError
	if errors.As(err, &rej) {
		c := *rej
		c.Reason = redact(c.Reason, token)
		return &c
	}
	return &redactedError{msg: redact(err.Error(), token), cause: err}
}

type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }

// Is answers for the cause without handing it out (its message holds the token).
func (e *redactedError) Is(target error) bool { return errors.Is(e.cause, target) }

func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "<token>")
}
