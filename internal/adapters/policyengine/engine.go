// Package policyengine is temco's embedded policy engine: it evaluates the
// Rego modules that tenants store in temco in-process with OPA's Go library
// and answers exactly what OPA's Data API (POST /v1/data/<path>) would, so
// the policy controller can use it in place of an external OPA server when a
// policy intent names no engineUrl.
//
// The modules are written by tenants and evaluated inside temco's worker, so
// they are compiled against restricted capabilities: no builtin that reaches
// the network, the host's files or its environment is available (see
// removedBuiltins), schema annotations are not loaded (a $ref could read
// files or fetch URLs) and print output is discarded.
//
// Rego version: OPA 1.x parses Rego v1, but EMCO's own examples are written in
// v0 syntax (`p { ... }`, `import future.keywords.in`). Each module is parsed
// as v1 first and, only when that fails, as v0; the version that parses is
// remembered on that module (ast.Module carries it) and the compiler treats
// each module according to it, so v0 and v1 modules can be mixed. When
// neither parses, the error reported is the one from the version whose parser
// got further into the text (v1 on a tie), which is the syntax the author
// most likely meant.
package policyengine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/util"
)

// MaxModuleBytes bounds one module's text (256 KiB) so that a tenant cannot
// make the worker parse and compile arbitrarily large sources.
const MaxModuleBytes = 256 << 10

// maxCacheEntries caps the prepared-query cache; entries are small but each
// holds a compiled module set.
const maxCacheEntries = 64

// removedBuiltins are taken out of the capabilities because they reach
// outside the evaluation: the network (http.send, net.lookup_ip_addr), the
// environment and configuration (opa.runtime), local files or remote URLs
// through JSON-schema $ref (json.match_schema, json.verify_schema), and
// request signing with credentials that have no place in a tenant policy
// (providers.aws.sign_req, dropped to be safe).
var removedBuiltins = []string{
	"http.send",
	"net.lookup_ip_addr",
	"opa.runtime",
	"json.match_schema",
	"json.verify_schema",
	"providers.aws.sign_req",
}

var (
	capsOnce sync.Once
	capsV1   *ast.Capabilities
	capsV0   *ast.Capabilities
)

// capabilities returns the restricted capabilities for parsing v1 and v0
// modules; the v1 set is also what the compiler and evaluator use.
func capabilities() (v1, v0 *ast.Capabilities) {
	capsOnce.Do(func() {
		capsV1 = restrict(ast.CapabilitiesForThisVersion())
		capsV0 = restrict(ast.CapabilitiesForThisVersion(ast.CapabilitiesRegoVersion(ast.RegoV0)))
	})
	return capsV1, capsV0
}

func restrict(c *ast.Capabilities) *ast.Capabilities {
	removed := make(map[string]bool, len(removedBuiltins))
	for _, name := range removedBuiltins {
		removed[name] = true
	}
	kept := make([]*ast.Builtin, 0, len(c.Builtins))
	for _, b := range c.Builtins {
		if !removed[b.Name] {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	// A non-nil empty list means "no host may be contacted", whereas nil
	// would mean "any host" for the remaining network-aware code paths.
	c.AllowNet = []string{}
	return c
}

// Check parses and compiles one module on its own with the restricted
// capabilities, so that a tenant's module is rejected when it is stored rather
// than when a decision is needed. The error names the module and the line.
func Check(name, module string) error {
	m, err := parse(name, module)
	if err != nil {
		return err
	}
	_, err = compile(map[string]*ast.Module{name: m})
	return err
}

// CheckWith is Check, then the module compiled with others (name → text, the project's
// other modules), as Evaluate will compile them: a module valid alone may conflict with
// another (a complete rule given two values, a default defined twice).
func CheckWith(name, module string, others map[string]string) error {
	m, err := parse(name, module)
	if err != nil {
		return err
	}
	parsed := map[string]*ast.Module{name: m}
	if _, err := compile(parsed); err != nil {
		return err
	}
	for n, text := range others {
		if n == name {
			continue
		}
		if o, err := parse(n, text); err == nil { // one that no longer parses fails its own evaluations
			parsed[n] = o
		}
	}
	if len(parsed) == 1 {
		return nil
	}
	_, err = compile(parsed)
	return err
}

// parse checks the size limits and parses one module, v1 first and v0 when
// v1 fails (see the package documentation).
func parse(name, text string) (*ast.Module, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("policyengine: module %q is empty", name)
	}
	if len(text) > MaxModuleBytes {
		return nil, fmt.Errorf("policyengine: module %q is %d bytes, more than the %d allowed", name, len(text), MaxModuleBytes)
	}
	v1caps, v0caps := capabilities()
	opts := ast.ParserOptions{
		RegoVersion:       ast.RegoV1,
		Capabilities:      v1caps,
		ProcessAnnotation: true,
	}
	m, errV1 := ast.ParseModuleWithOpts(name, text, opts)
	if errV1 == nil {
		return m, nil
	}
	opts.RegoVersion, opts.Capabilities = ast.RegoV0, v0caps
	m, errV0 := ast.ParseModuleWithOpts(name, text, opts)
	if errV0 == nil {
		return m, nil
	}
	if errorRow(errV0) > errorRow(errV1) {
		return nil, fmt.Errorf("policyengine: module %q (Rego v0): %w", name, errV0)
	}
	return nil, fmt.Errorf("policyengine: module %q: %w", name, errV1)
}

// errorRow is the line of the first parse error, 0 when unknown.
func errorRow(err error) int {
	var errs ast.Errors
	if errors.As(err, &errs) && len(errs) > 0 && errs[0].Location != nil {
		return errs[0].Location.Row
	}
	return 0
}

// compile compiles parsed modules with the restricted capabilities. Schema
// annotations are not used for type checking: loading them would follow $ref
// to files or URLs.
func compile(modules map[string]*ast.Module) (*ast.Compiler, error) {
	caps, _ := capabilities()
	c := ast.NewCompiler().
		WithCapabilities(caps).
		WithEnablePrintStatements(false).
		WithUseTypeCheckAnnotations(false)
	c.Compile(modules)
	if c.Failed() {
		return nil, fmt.Errorf("policyengine: %w", c.Errors)
	}
	return c, nil
}

// Evaluate answers OPA's Data API for path ("data", "data/emco", or with a
// leading "v1/", as EMCO builds it from engineUrl and policyName) over
// modules (name → text) with input (the value of "input"; empty or null means
// no input). It returns the body OPA would: {"result": <value>} when the path
// is defined and {} when it is not. ctx bounds the evaluation.
func Evaluate(ctx context.Context, modules map[string]string, path string, input json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("policyengine: %w", err)
	}
	ref, err := dataRef(path)
	if err != nil {
		return nil, err
	}
	var in ast.Value
	if trimmed := bytes.TrimSpace(input); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		var v any
		if err := util.UnmarshalJSON(trimmed, &v); err != nil {
			return nil, fmt.Errorf("policyengine: input is not valid JSON: %w", err)
		}
		if in, err = ast.InterfaceToValue(v); err != nil {
			return nil, fmt.Errorf("policyengine: input: %w", err)
		}
	}

	pq, err := prepared(ctx, modules, ref)
	if err != nil {
		return nil, err
	}
	var evalOpts []rego.EvalOption
	if in != nil {
		evalOpts = append(evalOpts, rego.EvalParsedInput(in))
	}
	rs, err := pq.Eval(ctx, evalOpts...)
	if err != nil {
		return nil, fmt.Errorf("policyengine: evaluating %s: %w", ref, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Result any `json:"result"`
	}{rs[0].Expressions[0].Value}); err != nil {
		return nil, fmt.Errorf("policyengine: encoding result: %w", err)
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// dataRef turns a Data API path into the reference OPA's server would query:
// segments are URL-unescaped and integer segments become numbers, as in OPA's
// stringPathToDataRef.
func dataRef(path string) (ast.Ref, error) {
	p := strings.Trim(path, "/")
	p = strings.TrimPrefix(p, "v1/")
	if p != "data" && !strings.HasPrefix(p, "data/") {
		return nil, fmt.Errorf("policyengine: path %q is not under data", path)
	}
	ref := ast.Ref{ast.DefaultRootDocument}
	for _, seg := range strings.Split(strings.TrimPrefix(p, "data"), "/") {
		if seg == "" {
			continue
		}
		if s, err := url.PathUnescape(seg); err == nil {
			seg = s
		}
		if strings.Contains(seg, `"`) {
			return nil, fmt.Errorf("policyengine: path %q: invalid segment %q", path, seg)
		}
		if i, ok := util.Atoi64(seg); ok {
			ref = append(ref, ast.IntNumberTerm(int(i)))
		} else {
			ref = append(ref, ast.StringTerm(seg))
		}
	}
	return ref, nil
}

// The cache holds prepared queries keyed by the module set's hash and the
// queried reference, so that repeated decisions over the same stored modules
// neither reparse nor recompile them. When full, an arbitrary entry is
// evicted; prepared queries are safe for concurrent evaluation.
var cache = struct {
	sync.Mutex
	entries map[string]rego.PreparedEvalQuery
}{entries: make(map[string]rego.PreparedEvalQuery)}

func prepared(ctx context.Context, modules map[string]string, ref ast.Ref) (rego.PreparedEvalQuery, error) {
	key := modulesHash(modules) + "\x00" + ref.String()
	cache.Lock()
	pq, ok := cache.entries[key]
	cache.Unlock()
	if ok {
		return pq, nil
	}

	parsed := make(map[string]*ast.Module, len(modules))
	for name, text := range modules {
		m, err := parse(name, text)
		if err != nil {
			return rego.PreparedEvalQuery{}, err
		}
		parsed[name] = m
	}
	compiler, err := compile(parsed)
	if err != nil {
		return rego.PreparedEvalQuery{}, err
	}
	caps, _ := capabilities()
	pq, err = rego.New(
		rego.Compiler(compiler),
		rego.Capabilities(caps),
		rego.ParsedQuery(ast.NewBody(ast.NewExpr(ast.NewTerm(ref)))),
		rego.EnablePrintStatements(false),
	).PrepareForEval(ctx)
	if err != nil {
		return rego.PreparedEvalQuery{}, fmt.Errorf("policyengine: preparing %s: %w", ref, err)
	}

	cache.Lock()
	defer cache.Unlock()
	if _, ok := cache.entries[key]; !ok && len(cache.entries) >= maxCacheEntries {
		for k := range cache.entries {
			delete(cache.entries, k)
			break
		}
	}
	cache.entries[key] = pq
	return pq, nil
}

// modulesHash is a SHA-256 over the length-prefixed names and texts in name
// order, so that no two different module sets share a key.
func modulesHash(modules map[string]string) string {
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	var n [8]byte
	write := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, name := range names {
		write(name)
		write(modules[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}
