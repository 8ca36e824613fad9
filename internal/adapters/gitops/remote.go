package gitops

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Remote is one branch of a git repository and the credentials to write it. Token is a
// secret: String, Format and LogValue leave it out, and so does every error of this package.
type Remote struct {
	URL    string // http(s) clone URL; credentials in it are moved to User and Token
	Branch string
	User   string
	Token  string
}

// String names the remote without its token (nor any credentials written in the URL).
func (r Remote) String() string {
	s := redactURL(r.URL) + " branch " + r.Branch
	if r.User != "" {
		s += " as " + r.User
	}
	return s
}

// Format prints String for every verb, %#v and %+v included, so that no formatting of a
// Remote shows its token.
func (r Remote) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(r.String())) }

// LogValue keeps the token out of structured logs (slog's JSON handler would otherwise
// marshal every field).
func (r Remote) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", redactURL(r.URL)), slog.String("branch", r.Branch), slog.String("user", r.User))
}

// normalized moves credentials written in the URL into User and Token (the URL is the key
// of the local clone and is stored in its configuration: it must carry no secret).
func (r Remote) normalized() (Remote, error) {
	u, err := url.Parse(r.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return r, &RejectedError{URL: redactURL(r.URL), Branch: r.Branch, Reason: "not an http(s) git URL"}
	}
	if u.User != nil {
		if r.User == "" {
			r.User = u.User.Username()
		}
		if p, ok := u.User.Password(); ok && r.Token == "" {
			r.Token = p
		}
		u.User = nil
		r.URL = u.String()
	}
	if err := validBranch(r.Branch); err != nil {
		return r, &RejectedError{URL: r.URL, Branch: r.Branch, Reason: err.Error()}
	}
	return r, nil
}

// auth is the basic authentication git hosts take a token with (GitHub and Gitea accept
// any user name with a token; "git" stands in when none is given).
func (r Remote) auth() transport.AuthMethod {
	if r.User == "" && r.Token == "" {
		return nil
	}
	user := r.User
	if user == "" {
		user = "git"
	}
	return &githttp.BasicAuth{Username: user, Password: r.Token}
}

// redactURL drops the user information of a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "<credentials>@" + raw[i+1:]
		}
		return raw
	}
	u.User = nil
	return u.String()
}

// validBranch refuses names git refuses in a ref, or that would change the refspec.
func validBranch(b string) error {
	switch {
	case b == "":
		return fmt.Errorf("no branch given")
	case strings.HasPrefix(b, "-"), strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"), strings.HasSuffix(b, ".lock"),
		strings.Contains(b, ".."), strings.Contains(b, "//"), strings.Contains(b, "@{"), strings.ContainsAny(b, " \t\n:*?[\\^~\x7f"):
		return fmt.Errorf("invalid branch name %q", b)
	}
	return nil
}
