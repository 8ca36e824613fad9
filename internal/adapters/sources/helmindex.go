package sources

// A Helm repository's index.yaml is read as a stream, never held or parsed whole: parsed
// whole (Helm's way), a 50 MiB index (TrueCharts' in 2024; Bitnami's was 27 MB in 2026)
// takes 1.3 GiB of heap and 10 s of CPU, and 8 MiB of hostile YAML (a flow list of
// one-letter items) 1.2 GiB, measured. Only the entries of the charts asked for are kept,
// each version parsed alone (at most maxVersionBytes of text) and reduced to what a
// resolution reads; the rest of the index is skipped line by line (YAML in the block style
// Helm writes) or token by token (JSON, `helm repo index --json`).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

const (
	// maxIndex bounds the bytes of an index read: the largest public ones are 50 MB.
	maxIndex = 64 << 20
	// maxVersionBytes bounds one version's entry: Helm's are a few KiB.
	maxVersionBytes = 256 << 10
	// maxVersions bounds the versions of one chart kept (Bitnami's index held 15,300
	// entries for all of its charts).
	maxVersions = 20000
	// maxSkippedLine is what is looked at of a line outside the charts asked for.
	maxSkippedLine = 64 << 10
)

// indexEntries reads the versions of charts from an index (at most maxIndex bytes of r),
// a chart the index does not list having none.
func indexEntries(r io.Reader, charts map[string]bool) (map[string]repo.ChartVersions, error) {
	lr := &io.LimitedReader{R: r, N: maxIndex + 1}
	br := bufio.NewReaderSize(lr, maxSkippedLine)
	var out map[string]repo.ChartVersions
	var err error
	if isJSON(br) {
		out, err = jsonEntries(json.NewDecoder(br), charts)
	} else {
		out, err = yamlEntries(br, charts)
	}
	if lr.N <= 0 {
		return nil, Permanent(fmt.Errorf("more than %d bytes", maxIndex))
	}
	return out, err
}

// isJSON says whether the index's first character (past spaces and a BOM) opens an object.
func isJSON(br *bufio.Reader) bool {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil {
			return false
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n', 0xef, 0xbb, 0xbf:
			continue
		default:
			return c == '{'
		}
	}
}

// versionsOf gathers the versions of the charts asked for.
type versionsOf struct {
	charts map[string]bool
	out    map[string]repo.ChartVersions
}

// add parses one version's entry (a YAML list of one item, or a JSON object) of chart and
// keeps what a resolution reads of it; an entry without metadata is dropped, as Helm does.
func (v *versionsOf) add(chartName string, entry []byte, asYAML bool) error {
	if len(v.out[chartName]) >= maxVersions {
		return fmt.Errorf("chart %q has more than %d versions", chartName, maxVersions)
	}
	var cv repo.ChartVersion
	var err error
	if asYAML {
		var list []repo.ChartVersion
		if err = yaml.Unmarshal(entry, &list); err == nil && len(list) == 1 {
			cv = list[0]
		}
	} else {
		err = json.Unmarshal(entry, &cv)
	}
	if err != nil {
		return fmt.Errorf("chart %q: a version's entry: %v", chartName, err)
	}
	if cv.Metadata == nil {
		return nil
	}
	kept := &repo.ChartVersion{Metadata: &chart.Metadata{Name: cv.Name, Version: cv.Version}, Digest: cv.Digest}
	if len(cv.URLs) > 0 {
		kept.URLs = cv.URLs[:1]
	}
	if v.out == nil {
		v.out = map[string]repo.ChartVersions{}
	}
	v.out[chartName] = append(v.out[chartName], kept)
	return nil
}

// yamlEntries reads an index in the block style Helm writes: top-level key "entries:",
// under it one key per chart (all at one indentation), under each the list of its
// versions. Lines of the charts not asked for are looked at for their indentation only;
// reading ends once every chart asked for was read.
func yamlEntries(br *bufio.Reader, charts map[string]bool) (map[string]repo.ChartVersions, error) {
	x := &yamlIndex{versionsOf: versionsOf{charts: charts}, keyIndent: -1, itemIndent: -1, read: map[string]bool{}}
	for n := 1; ; n++ {
		line, err := readLine(br, x.current != "")
		if err == io.EOF && line == nil {
			err := x.flush()
			return x.out, err
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		done, err := x.line(n, line)
		if err != nil {
			return nil, err
		}
		if done {
			return x.out, nil
		}
	}
}

// yamlIndex is where yamlEntries is in an index, line by line.
type yamlIndex struct {
	versionsOf
	inEntries  bool
	keyIndent  int             // the indentation of the charts' keys; -1 until the first
	current    string          // the chart asked for whose versions the lines are
	itemIndent int             // the indentation of current's versions; -1 until the first
	item       []byte          // the lines of current's version read so far
	read       map[string]bool // the charts asked for whose versions were read
}

// line takes line n: outside the entries, a top-level key; in them, a chart's key or a
// line of a version. Done once every chart asked for was read.
func (x *yamlIndex) line(n int, line []byte) (done bool, err error) {
	content := bytes.TrimLeft(line, " ")
	indent := len(line) - len(content)
	switch {
	case len(content) == 0 || content[0] == '#':
		if len(x.item) > 0 {
			x.item = append(x.item, '\n') // a block scalar's empty line
		}
		return false, nil
	case !x.inEntries:
		return false, x.topLevel(n, content, indent)
	}
	if x.keyIndent < 0 {
		x.keyIndent = indent
	}
	if indent <= x.keyIndent && !isItem(content) { // a chart's key, or the next top-level key
		return x.key(n, content, indent)
	}
	if x.current == "" {
		return false, nil
	}
	return false, x.versionLine(n, line, content, indent)
}

// topLevel looks at a top-level line for the key "entries:" opening a block.
func (x *yamlIndex) topLevel(n int, content []byte, indent int) error {
	if indent != 0 || !bytes.HasPrefix(content, []byte("entries:")) {
		return nil
	}
	switch rest := bytes.TrimSpace(content[len("entries:"):]); {
	case len(rest) == 0 || rest[0] == '#':
		x.inEntries = true
	case string(rest) != "{}":
		return fmt.Errorf("line %d: the entries are not in the block style Helm writes (nor is the index JSON)", n)
	}
	return nil
}

// key ends the chart being read at a chart's key, or at the next top-level key (which
// ends the entries), and starts reading the chart it names if asked for. Done once every
// chart asked for was read.
func (x *yamlIndex) key(n int, content []byte, indent int) (done bool, err error) {
	if err := x.flush(); err != nil {
		return false, err
	}
	if x.current != "" {
		x.read[x.current] = true
	}
	x.current, x.itemIndent = "", -1
	if len(x.read) == len(x.charts) {
		return true, nil
	}
	if indent == 0 {
		x.inEntries = false
		return false, nil
	}
	if indent < x.keyIndent {
		return false, fmt.Errorf("line %d: a chart's key less indented than the others", n)
	}
	name, err := chartKey(content)
	if err != nil {
		return false, fmt.Errorf("line %d: %v", n, err)
	}
	if x.charts[name] {
		x.current = name
	}
	return false, nil
}

// versionLine adds a line of the chart being read to its version, parsing the version
// before when the line starts another.
func (x *yamlIndex) versionLine(n int, line, content []byte, indent int) error {
	if x.itemIndent < 0 {
		if !isItem(content) {
			return fmt.Errorf("line %d: chart %q: its versions are not a list", n, x.current)
		}
		x.itemIndent = indent
	}
	switch {
	case indent < x.itemIndent:
		return fmt.Errorf("line %d: chart %q: a line less indented than its versions", n, x.current)
	case indent == x.itemIndent && isItem(content):
		if err := x.flush(); err != nil {
			return err
		}
	}
	if len(x.item)+len(line) > maxVersionBytes {
		return fmt.Errorf("line %d: chart %q: a version's entry of more than %d bytes", n, x.current, maxVersionBytes)
	}
	x.item = append(append(x.item, line[x.itemIndent:]...), '\n')
	return nil
}

// flush parses the version read so far.
func (x *yamlIndex) flush() error {
	if len(x.item) == 0 {
		return nil
	}
	err := x.add(x.current, x.item, true)
	x.item = x.item[:0]
	return err
}

// isItem says whether a line's content starts a list item.
func isItem(content []byte) bool {
	return string(content) == "-" || bytes.HasPrefix(content, []byte("- "))
}

// chartKey is the chart a key line ("web:", `"1chart":`) names; the versions follow on
// the next lines.
func chartKey(content []byte) (string, error) {
	if name, ok := plainKey(content); ok {
		return name, nil
	}
	var m map[string]json.RawMessage
	if err := yaml.Unmarshal(content, &m); err != nil || len(m) != 1 {
		return "", fmt.Errorf("not a chart's key: %.80q", content)
	}
	for name, value := range m {
		if len(value) > 0 && string(value) != "null" {
			return "", fmt.Errorf("chart %q: its versions are not in the block style Helm writes", name)
		}
		return name, nil
	}
	return "", nil
}

// plainKey is the name of a key line as Helm writes nearly all ("web:"), without YAML's
// parser: letters, digits, '.', '_' and '-', then the colon ending the line.
func plainKey(content []byte) (string, bool) {
	name, ok := bytes.CutSuffix(bytes.TrimRight(content, " "), []byte(":"))
	if !ok || len(name) == 0 || name[0] == '-' {
		return "", false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "", false
		}
	}
	if _, err := strconv.ParseFloat(string(name), 64); err == nil {
		return "", false // a number: YAML's parser says how it reads
	}
	switch strings.ToLower(string(name)) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~":
		return "", false
	}
	return string(name), true
}

// readLine reads a line without its end; one longer than the reader's buffer is kept
// whole when keep (up to maxVersionBytes) and cut to what was read otherwise.
func readLine(br *bufio.Reader, keep bool) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == nil || err == io.EOF {
		if err == io.EOF && len(line) == 0 {
			return nil, io.EOF
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		if keep && len(long) <= maxVersionBytes {
			long = append(long, line...)
		}
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	return bytes.TrimRight(long, "\r\n"), nil
}

// jsonEntries reads an index in JSON, token by token: the entries of the charts not asked
// for are skipped without being decoded.
func jsonEntries(dec *json.Decoder, charts map[string]bool) (map[string]repo.ChartVersions, error) {
	v := versionsOf{charts: charts}
	if err := expect(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if key != "entries" {
			if err := skip(dec); err != nil {
				return nil, err
			}
			continue
		}
		if err := expect(dec, '{'); err != nil {
			return nil, fmt.Errorf("entries: %w", err)
		}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return nil, err
			}
			s, _ := name.(string)
			if !charts[s] {
				if err := skip(dec); err != nil {
					return nil, err
				}
				continue
			}
			if tok, err := dec.Token(); err != nil {
				return nil, err
			} else if tok == nil {
				continue // null: no versions
			} else if tok != json.Delim('[') {
				return nil, fmt.Errorf("chart %q: %v where a list of versions was expected", s, tok)
			}
			for dec.More() {
				var entry json.RawMessage
				if err := dec.Decode(&entry); err != nil {
					return nil, err
				}
				if len(entry) > maxVersionBytes {
					return nil, fmt.Errorf("chart %q: a version's entry of more than %d bytes", s, maxVersionBytes)
				}
				if err := v.add(s, entry, false); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil { // ]
				return nil, err
			}
		}
		if _, err := dec.Token(); err != nil { // }
			return nil, err
		}
	}
	return v.out, nil
}

// expect reads the delimiter d.
func expect(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("%v where %v was expected", tok, d)
	}
	return nil
}

// skip reads past one value, nested ones included, a token at a time.
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}
