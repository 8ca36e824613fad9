package gitops

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ReadFile returns the content of path on a fresh fetch of r's branch, and the head it was
// read at. An absent file, or an absent branch, is nil content and no error.
func (w *Writer) ReadFile(ctx context.Context, r Remote, path string) ([]byte, string, error) {
	var data []byte
	head, err := w.read(ctx, r, func(root *object.Tree) error {
		f, err := root.File(path)
		if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		s, err := f.Contents()
		data = []byte(s)
		return err
	})
	return data, head, err
}

// ReadDir returns the files below dir (at any depth, keyed by their path relative to dir)
// on a fresh fetch of r's branch, and the head they were read at. An absent directory or
// branch is an empty map and no error.
func (w *Writer) ReadDir(ctx context.Context, r Remote, dir string) (map[string][]byte, string, error) {
	files := map[string][]byte{}
	head, err := w.read(ctx, r, func(root *object.Tree) error {
		t := root
		if d := strings.Trim(dir, "/"); d != "" {
			var err error
			if t, err = root.Tree(d); err != nil {
				if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
					return nil
				}
				return err
			}
		}
		return t.Files().ForEach(func(f *object.File) error {
			s, err := f.Contents()
			files[f.Name] = []byte(s)
			return err
		})
	})
	return files, head, err
}

// read fetches r's branch and calls fn with its tree (not at all when the branch is absent).
func (w *Writer) read(ctx context.Context, r Remote, fn func(*object.Tree) error) (string, error) {
	r, err := r.normalized()
	if err != nil {
		return "", err
	}
	var head plumbing.Hash
	err = w.withClone(ctx, r, func(cl *clone) (err error) {
		if head, err = cl.fetch(ctx, r); err != nil || head.IsZero() {
			return err
		}
		c, err := object.GetCommit(cl.repo.Storer, head)
		if err != nil {
			return fmt.Errorf("read %s: %w", r, err)
		}
		root, err := c.Tree()
		if err != nil {
			return fmt.Errorf("read %s: %w", r, err)
		}
		if err := fn(root); err != nil {
			return fmt.Errorf("read %s: %w", r, err)
		}
		return nil
	})
	if err != nil || head.IsZero() {
		return "", safeError(err, r.Token)
	}
	return head.String(), nil
}

var revisionHash = regexp.MustCompile(`(?:^|[@/:])([0-9a-f]{40})$`)

// ParseRevision returns the commit hash of a revision as written by git ("<hash>") or
// by Flux in a status ("<branch>@sha1:<hash>", or "<branch>/<hash>" before Flux 2.0).
func ParseRevision(rev string) (plumbing.Hash, error) {
	m := revisionHash.FindStringSubmatch(strings.TrimSpace(rev))
	if m == nil {
		return plumbing.ZeroHash, fmt.Errorf("%w: %q", ErrInvalidRevision, rev)
	}
	return plumbing.NewHash(m[1]), nil
}

// Contains reports whether commit ancestor is descendant or one of its ancestors, that is
// whether a cluster that applied descendant applied ancestor's change. Both may be given
// as Flux writes revisions. Unknown commits are fetched (r's branch) first; a commit the
// branch does not hold is not contained.
func (w *Writer) Contains(ctx context.Context, r Remote, ancestor, descendant string) (bool, error) {
	a, err := ParseRevision(ancestor)
	if err != nil {
		return false, err
	}
	d, err := ParseRevision(descendant)
	if err != nil {
		return false, err
	}
	r, err = r.normalized()
	if err != nil {
		return false, err
	}
	var in bool
	err = w.withClone(ctx, r, func(cl *clone) (err error) {
		in, err = cl.contains(ctx, r, a, d)
		return err
	})
	return in, safeError(err, r.Token)
}

func (cl *clone) contains(ctx context.Context, r Remote, a, d plumbing.Hash) (bool, error) {
	s := cl.repo.Storer
	if s.HasEncodedObject(a) != nil || s.HasEncodedObject(d) != nil {
		if _, err := cl.fetch(ctx, r); err != nil {
			return false, err
		}
	}
	dc, err := object.GetCommit(s, d)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", d, err)
	}
	if a == d {
		return true, nil
	}
	ac, err := object.GetCommit(s, a)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", a, err)
	}
	return ac.IsAncestor(dc)
}

// SameAt reports whether every path (a file or a directory) holds at revision rev what it
// holds at the head of r's branch, fetched fresh; a path absent at both holds the same.
// It tells whether a cluster that applied rev applied what git holds now for those paths,
// whatever was committed elsewhere in the repository since. A revision the branch does not
// hold (after the fetch) holds nothing the same.
func (w *Writer) SameAt(ctx context.Context, r Remote, rev string, paths []string) (bool, error) {
	at, err := ParseRevision(rev)
	if err != nil {
		return false, err
	}
	r, err = r.normalized()
	if err != nil {
		return false, err
	}
	same := false
	err = w.withClone(ctx, r, func(cl *clone) error {
		head, err := cl.fetch(ctx, r)
		if err != nil || head.IsZero() {
			return err
		}
		if cl.repo.Storer.HasEncodedObject(at) != nil {
			return nil // not fetched with the branch: not on it
		}
		now, err := entries(cl, head, paths)
		if err != nil {
			return err
		}
		then, err := entries(cl, at, paths)
		if err != nil {
			return err
		}
		same = slices.Equal(now, then)
		return nil
	})
	return same, safeError(err, r.Token)
}

// entries are the object hashes of paths in commit c's tree (zero for an absent path).
func entries(cl *clone, c plumbing.Hash, paths []string) ([]plumbing.Hash, error) {
	commit, err := object.GetCommit(cl.repo.Storer, c)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", c, err)
	}
	root, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", c, err)
	}
	out := make([]plumbing.Hash, len(paths))
	for i, p := range paths {
		e, err := root.FindEntry(strings.Trim(p, "/"))
		switch {
		case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrFileNotFound):
		case err != nil:
			return nil, fmt.Errorf("read %s at %s: %w", p, c, err)
		default:
			out[i] = e.Hash
		}
	}
	return out, nil
}
