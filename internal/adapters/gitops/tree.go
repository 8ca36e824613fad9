package gitops

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Change is one commit's worth of edits to a branch.
type Change struct {
	// Replace lists paths (directories, with or without a trailing slash, or files) whose
	// current content is dropped before Files are written.
	Replace []string
	// Files maps a path to its new content.
	Files   map[string][]byte
	Message string
	// CreateBranch creates a missing branch, its first commit holding only this change
	// (the status branch). Without it a missing branch is a RejectedError.
	CreateBranch bool
}

// dirEdit is what a change does to one directory of the tree.
type dirEdit struct {
	dropAll bool                // the directory's current content is dropped (Replace of the root)
	drop    map[string]bool     // entries whose current content is dropped
	files   map[string][]byte   // files written
	dirs    map[string]*dirEdit // subdirectories edited
}

// plan sorts a change's paths into the directories they touch.
func plan(c Change) (*dirEdit, error) {
	root := &dirEdit{}
	for _, p := range c.Replace {
		parts, err := splitPath(strings.TrimSuffix(p, "/"))
		if err != nil {
			return nil, err
		}
		d := root.walk(parts[:len(parts)-1])
		if d.drop == nil {
			d.drop = map[string]bool{}
		}
		d.drop[parts[len(parts)-1]] = true
	}
	for p, data := range c.Files {
		parts, err := splitPath(p)
		if err != nil {
			return nil, err
		}
		d := root.walk(parts[:len(parts)-1])
		name := parts[len(parts)-1]
		if d.files == nil {
			d.files = map[string][]byte{}
		}
		d.files[name] = data
	}
	if err := root.check(""); err != nil {
		return nil, err
	}
	return root, nil
}

func (d *dirEdit) walk(parts []string) *dirEdit {
	for _, name := range parts {
		if d.dirs == nil {
			d.dirs = map[string]*dirEdit{}
		}
		sub := d.dirs[name]
		if sub == nil {
			sub = &dirEdit{}
			d.dirs[name] = sub
		}
		d = sub
	}
	return d
}

// check refuses a change that writes a file where it also writes into a directory.
func (d *dirEdit) check(prefix string) error {
	for name, sub := range d.dirs {
		if _, ok := d.files[name]; ok {
			return fmt.Errorf("%w: %s is written both as a file and as a directory", ErrInvalidChange, prefix+name)
		}
		if err := sub.check(prefix + name + "/"); err != nil {
			return err
		}
	}
	return nil
}

// splitPath checks a relative slash-separated path and returns its components.
func splitPath(p string) ([]string, error) {
	if p == "" || strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%w: path %q is not relative", ErrInvalidChange, p)
	}
	parts := strings.Split(p, "/")
	for _, part := range parts {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") || strings.ContainsRune(part, 0) {
			return nil, fmt.Errorf("%w: path %q", ErrInvalidChange, p)
		}
	}
	return parts, nil
}

// treeBuilder writes the trees and blobs of an edited tree into the local clone and
// remembers which objects the base commit does not hold (what a push must send).
type treeBuilder struct {
	s   storer.EncodedObjectStorer
	new []plumbing.Hash
}

// apply returns the hash of directory base (zero: none) edited by e; zero when the
// result is empty (git stores no empty directories).
func (b *treeBuilder) apply(e *dirEdit, base plumbing.Hash) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if !base.IsZero() && !e.dropAll {
		t, err := object.GetTree(b.s, base)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", base, err)
		}
		for _, en := range t.Entries {
			entries[en.Name] = en
		}
	}
	for name := range e.drop {
		delete(entries, name)
	}
	for name, sub := range e.dirs {
		var subBase plumbing.Hash
		if en, ok := entries[name]; ok && en.Mode == filemode.Dir {
			subBase = en.Hash
		}
		h, err := b.apply(sub, subBase)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() {
			delete(entries, name)
		} else {
			entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}
	for name, data := range e.files {
		h := plumbing.ComputeHash(plumbing.BlobObject, data)
		mode := filemode.Regular
		if en, ok := entries[name]; ok && en.Mode == filemode.Executable {
			mode = en.Mode
		}
		if en, ok := entries[name]; !ok || en.Hash != h {
			if err := b.store(plumbing.BlobObject, h, data); err != nil {
				return plumbing.ZeroHash, err
			}
		}
		entries[name] = object.TreeEntry{Name: name, Mode: mode, Hash: h}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(entries))}
	for _, en := range entries {
		t.Entries = append(t.Entries, en)
	}
	sortEntries(t.Entries)
	obj := &plumbing.MemoryObject{}
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h := obj.Hash()
	if h == base {
		return base, nil
	}
	b.new = append(b.new, h)
	_, err := b.s.SetEncodedObject(obj)
	return h, err
}

// store writes a blob the base does not hold at this path (it may exist elsewhere in the
// clone, left by a refused push: it is sent again all the same).
func (b *treeBuilder) store(t plumbing.ObjectType, h plumbing.Hash, data []byte) error {
	b.new = append(b.new, h)
	if b.s.HasEncodedObject(h) == nil {
		return nil
	}
	obj := b.s.NewEncodedObject()
	obj.SetType(t)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	_, err = b.s.SetEncodedObject(obj)
	return err
}

// sortEntries orders a tree's entries as git does: by name, a directory's name compared
// as if it ended in "/" (so "a.yaml" sorts before directory "a", and "a" before "a0").
func sortEntries(es []object.TreeEntry) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(es, func(i, j int) bool { return key(es[i]) < key(es[j]) })
}
