package gitops

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A worker killed while it writes its clone can leave a ref file empty or an object file
// cut short. The clone is only a cache: the next commit must start it again, not fail.
func TestADamagedCloneIsStartedAgain(t *testing.T) {
	damages := map[string]func(t *testing.T, dir string){
		"empty tracking ref": func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "refs/remotes/origin/main")) },
		"empty other ref": func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "refs/remotes/origin/other"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"empty HEAD":   func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "HEAD")) },
		"empty config": func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "config")) },
		"empty objects": func(t *testing.T, dir string) {
			_ = filepath.Walk(filepath.Join(dir, "objects"), func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					truncate(t, p)
				}
				return nil
			})
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, r := server(t)
			w := &Writer{Dir: t.TempDir(), Author: "temco worker <worker@temco.test>"}
			if _, err := w.Commit(ctx, r, Change{Files: map[string][]byte{"a/one.yaml": []byte("1")}, Message: "one"}); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(w.Dir, cloneDirName(r.URL))
			damage(t, dir)
			// Another writer moves the branch, so the next commit fetches into the clone.
			if _, err := (&Writer{Dir: t.TempDir(), Author: w.Author}).Commit(ctx, r, Change{Files: map[string][]byte{"b/other.yaml": []byte("o")}, Message: "other"}); err != nil {
				t.Fatal(err)
			}
			// A new process: nothing of the clone is held in memory.
			w = &Writer{Dir: w.Dir, Author: w.Author}
			res, err := w.Commit(ctx, r, Change{Files: map[string][]byte{"a/two.yaml": []byte("2")}, Message: "two"})
			if err != nil {
				t.Fatalf("commit on a damaged clone: %v", err)
			}
			if res.Commit != serverGit(t, s, "rev-parse", "main") {
				t.Fatalf("result %+v is not the server's head", res)
			}
			if got := serverGit(t, s, "ls-tree", "-r", "--name-only", "main"); got != "README.md\na/one.yaml\na/two.yaml\nb/other.yaml" {
				t.Errorf("tree after the second commit: %q", got)
			}
		})
	}
}

func truncate(t *testing.T, p string) {
	t.Helper()
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
}
