package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
)

// errorTypeArg is the argument naming the error type, per constructor.
var errorTypeArg = map[string]int{
	"temporal.NewApplicationError":             1,
	"temporal.NewApplicationErrorWithCause":    1,
	"temporal.NewApplicationErrorWithOptions":  1,
	"temporal.NewNonRetryableApplicationError": 1,
}

// Error types are matched by string across activities, workflows, retry policies and the
// api: each is a constant in errors.go, never spelt out where an error is made or retried.
func TestErrorTypesAreNamedByTheirConstants(t *testing.T) {
	root := "../../.."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "tools") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(src), "go.temporal.io/sdk/temporal") {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var lits []ast.Expr
			switch n := n.(type) {
			case *ast.CallExpr:
				if i, ok := errorTypeArg[selector(n.Fun)]; ok && i < len(n.Args) {
					lits = append(lits, n.Args[i])
				}
			case *ast.KeyValueExpr: // RetryPolicy{NonRetryableErrorTypes: []string{...}}
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "NonRetryableErrorTypes" {
					if c, ok := n.Value.(*ast.CompositeLit); ok {
						lits = append(lits, c.Elts...)
					}
				}
			}
			for _, e := range lits {
				if lit, ok := e.(*ast.BasicLit); ok {
					t.Errorf("%s: error type %s spelt out: add it to internal/core/lifecycle/errors.go", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// selector is "pkg.Name" for a call of a package's function, else "".
func selector(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := s.X.(*ast.Ident); ok {
			return x.Name + "." + s.Sel.Name
		}
	}
	return ""
}

// A refusal of an external controller (contract.ErrorRefused) is the operation's invalid
// input, as a built-in controller's is.
func TestContractRefusalIsInvalidInput(t *testing.T) {
	if contract.ErrorRefused != ErrInvalidInput {
		t.Errorf("contract.ErrorRefused = %q, lifecycle.ErrInvalidInput = %q", contract.ErrorRefused, ErrInvalidInput)
	}
}
