package replay

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	histories = "../testdata/histories"
	sumsFile  = "SHA256SUMS"
)

// A recorded history proves that runs like it still replay only as long as it is what
// was recorded: a history edited or re-recorded in place fails here. `make histories`
// records a new set and appends its sums.
func TestRecordedHistoriesAreAsRecorded(t *testing.T) {
	sums := readSums(t, filepath.Join(histories, sumsFile))
	seen := map[string]bool{}
	err := filepath.WalkDir(histories, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(histories, path)
		rel = filepath.ToSlash(rel)
		if rel == sumsFile {
			return nil
		}
		seen[rel] = true
		want, ok := sums[rel]
		if !ok {
			t.Errorf("%s has no line in %s: record sets with `make histories`, which adds it", rel, sumsFile)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != want {
			t.Errorf("%s changed since it was recorded: sets are append-only; restore it and record a new set", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range sums {
		if !seen[rel] {
			t.Errorf("%s is in %s but missing: sets are append-only", rel, sumsFile)
		}
	}
}

// The sums themselves are append-only: a line changed or removed, in a commit or in the
// working tree, would let a re-recorded history pass the test above.
func TestHistorySumsOnlyGrow(t *testing.T) {
	path := filepath.Join(histories, sumsFile)
	if err := exec.Command("git", "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skip("not a git checkout:", err)
	}
	log, err := exec.Command("git", "log", "-p", "--format=commit %h", "--", path).Output()
	if err != nil {
		t.Fatalf("git log %s: %v", path, err)
	}
	diff, err := exec.Command("git", "diff", "HEAD", "--", path).Output()
	if err != nil {
		t.Fatalf("git diff %s: %v", path, err)
	}
	commit := "the working tree"
	for line := range strings.Lines(string(log) + "commit the working tree\n" + string(diff)) {
		if c, ok := strings.CutPrefix(line, "commit "); ok {
			commit = strings.TrimSpace(c)
		} else if strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "---") {
			t.Errorf("%s removes or changes the sum of a recorded history: %s", commit, strings.TrimSpace(line[1:]))
		}
	}
}

// readSums reads a sha256sum file: path (relative to its folder) -> hex sum.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("%s:%d: want `<sha256>  <set>/<file>`, got %q", path, n, sc.Text())
		}
		if _, dup := sums[file]; dup {
			t.Errorf("%s:%d: %s listed twice", path, n, file)
		}
		sums[file] = sum
	}
	return sums
}
