package emcoctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Runner sends documents to the API.
type Runner struct {
	API         string // base URL, e.g. http://127.0.0.1:9015
	Token       string // bearer token, when the API requires authentication
	Out         io.Writer
	StopOnError bool
	Wait        bool          // after instantiate/terminate/update of a DIG, wait for it to end
	Timeout     time.Duration // of each wait
	HTTP        *http.Client
}

// Result is one request made for a document.
type Result struct {
	Method, Path string
	Status       int
	Message      string
}

func (r Result) failed() bool { return r.Status < 200 || r.Status >= 300 }

func (r *Runner) url(p string) string {
	return strings.TrimSuffix(r.API, "/") + "/v2/" + strings.TrimPrefix(p, "/")
}

// request is a request to API path p, carrying the token.
func (r *Runner) request(method, p string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequest(method, r.url(p), body)
	if err == nil && r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	return req, err
}

// Apply creates every document in order (lifecycle actions are posted as they come).
func (r *Runner) Apply(docs []*Document) error {
	return r.each(docs, func(d *Document) (Result, error) {
		if op := d.Operation(); op != "" {
			return r.operate(d.ResourceContext.Anchor, d)
		}
		return r.send(http.MethodPost, d.ResourceContext.Anchor, d)
	})
}

// Update replaces every document in order (PUT anchor/name); actions are posted.
func (r *Runner) Update(docs []*Document) error {
	return r.each(docs, func(d *Document) (Result, error) {
		if d.Operation() != "" {
			return r.operate(d.ResourceContext.Anchor, d)
		}
		return r.send(http.MethodPut, d.Path(), d)
	})
}

// Get reads every document's resource.
func (r *Runner) Get(docs []*Document) error {
	return r.each(docs, func(d *Document) (Result, error) {
		p := d.Path()
		if op := d.Operation(); op != "" {
			p = path.Join(path.Dir(d.ResourceContext.Anchor), "status")
		}
		return r.do(http.MethodGet, p, nil, "")
	})
}

// Delete removes the documents in reverse order: an instantiate or apply becomes a
// terminate (waited for, so what follows can be deleted), other actions are skipped.
func (r *Runner) Delete(docs []*Document) error {
	rev := make([]*Document, len(docs))
	for i, d := range docs {
		rev[len(docs)-1-i] = d
	}
	return r.each(rev, func(d *Document) (Result, error) {
		switch d.Operation() {
		case "":
			return r.do(http.MethodDelete, d.Path(), nil, "")
		case "instantiate", "apply":
			target := path.Dir(d.ResourceContext.Anchor)
			res, err := r.do(http.MethodPost, target+"/terminate", nil, "")
			if err == nil && !res.failed() {
				err = r.awaitStatus(target, "Terminated", "TerminateFailed")
			}
			return res, err
		}
		return Result{}, errSkip
	})
}

var errSkip = fmt.Errorf("skipped")

// each runs fn for every document, printing one line per document.
func (r *Runner) each(docs []*Document, fn func(*Document) (Result, error)) error {
	failed := 0
	for _, d := range docs {
		res, err := fn(d)
		if err == errSkip {
			continue
		}
		msg := res.Message
		if err != nil {
			msg, res.Status = err.Error(), 0
		}
		fmt.Fprintf(r.Out, "%-6s %s %d %s\n", res.Method, "/v2/"+strings.TrimPrefix(res.Path, "/"), res.Status, msg)
		if err != nil || res.failed() {
			failed++
			if r.StopOnError {
				return fmt.Errorf("stopped at the first failure")
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d documents failed", failed, len(docs))
	}
	return nil
}

// operate posts a lifecycle action; a logical cloud's (and, with Wait, a DIG's) outcome
// is awaited: a DIG cannot be instantiated into a cloud still on its way.
func (r *Runner) operate(anchor string, d *Document) (Result, error) {
	var body any
	if d.Spec != nil {
		body = map[string]any{"metadata": d.Metadata, "spec": d.Spec}
	}
	res, err := r.do(http.MethodPost, anchor, body, "")
	if err != nil || res.failed() {
		return res, err
	}
	target, op := path.Dir(anchor), path.Base(anchor)
	cloud := strings.Contains(target, "/logical-clouds/")
	if !cloud && !r.Wait {
		return res, nil
	}
	switch op {
	case "instantiate", "update", "rollback":
		return res, r.awaitStatus(target, "Instantiated", "InstantiateFailed", "UpdateFailed")
	case "terminate":
		return res, r.awaitStatus(target, "Terminated", "TerminateFailed")
	}
	return res, nil
}

// awaitStatus polls a target's status until it is one of want (the first is success).
func (r *Runner) awaitStatus(target string, want ...string) error {
	deadline := time.Now().Add(r.Timeout)
	for {
		var s struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		req, err := r.request(http.MethodGet, target+"/status?output=summary", nil)
		if err != nil {
			return err
		}
		resp, err := r.HTTP.Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
		}
		for i, w := range want {
			if err == nil && s.Status == w {
				if i > 0 {
					return fmt.Errorf("%s ended %s: %s", target, w, s.Error)
				}
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not reach %s within %s (status %q)", target, want[0], r.Timeout, s.Status)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// send creates or replaces a document's resource: multipart when it carries a file.
func (r *Runner) send(method, p string, d *Document) (Result, error) {
	if d.ClusterLabel != "" {
		return r.do(method, p, map[string]string{"clusterLabel": d.ClusterLabel}, "")
	}
	var body any
	if d.Metadata != nil || d.Spec != nil {
		body = map[string]any{"metadata": d.Metadata, "spec": orEmpty(d.Spec)}
	}
	files := d.Files
	if d.File != "" {
		files = append([]string{d.File}, files...)
	}
	if len(files) == 0 {
		return r.do(method, p, body, "")
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, err := json.Marshal(body)
	if err != nil {
		return Result{}, err
	}
	if err := mw.WriteField("metadata", string(md)); err != nil {
		return Result{}, err
	}
	for _, f := range files {
		data, err := d.openFile(f)
		if err != nil {
			return Result{Method: method, Path: p}, err
		}
		fw, err := mw.CreateFormFile("file", filepath.Base(f))
		if err != nil {
			return Result{}, err
		}
		if _, err := fw.Write(data); err != nil {
			return Result{}, err
		}
	}
	if err := mw.Close(); err != nil {
		return Result{}, err
	}
	return r.do(method, p, buf.Bytes(), mw.FormDataContentType())
}

func orEmpty(spec any) any {
	if spec == nil {
		return map[string]any{}
	}
	return spec
}

// do makes one request; body is JSON-encoded unless it is already bytes of contentType.
func (r *Runner) do(method, p string, body any, contentType string) (Result, error) {
	res := Result{Method: method, Path: p}
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return res, err
		}
		rd, contentType = bytes.NewReader(data), "application/json"
	}
	req, err := r.request(method, p, rd)
	if err != nil {
		return res, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	res.Status = resp.StatusCode
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &m) == nil && m.Message != "" {
		res.Message = m.Message
	} else if method == http.MethodGet {
		res.Message = strings.TrimSpace(string(data))
	}
	return res, nil
}
