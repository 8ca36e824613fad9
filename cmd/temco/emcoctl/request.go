package emcoctl

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
)

// clientHeader is api.ClientHeader (the client stays free of the api's packages).
const clientHeader = "X-Temco-Client"

// answer is what the API said to one request.
type answer struct {
	status  int
	message string // on failure: the API's {"message": ...}, else its body
	body    []byte
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// failed: refused, or accepted but the awaited operation then failed (its message says so).
func (a answer) failed() bool { return !a.ok() || a.message != "" }

// url is the full URL of a path below /v2; a ?query in an anchor stays a query.
func (r *Runner) url(p string) string {
	return strings.TrimSuffix(r.API, "/") + shown(p)
}

// request builds a step's request with the headers emcoctl sends.
func (r *Runner) request(ctx context.Context, s step) (*http.Request, error) {
	var body io.Reader
	contentType := ""
	switch d := s.doc; {
	case s.send && (d.file != "" || len(d.files) > 0):
		data, ct, err := multipartBody(d)
		if err != nil {
			return nil, err
		}
		body, contentType = bytes.NewReader(data), ct
	case s.send:
		body, contentType = bytes.NewReader(d.body), "application/json"
	case s.method == http.MethodPost: // delete's terminate: an empty JSON request
		contentType = "application/json"
	}
	req, err := r.newRequest(ctx, s.method, s.path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// newRequest is a request to a path below /v2, carrying the token; a GET asks for JSON,
// which EMCO needs to answer an app or profile with its metadata rather than its file.
// Every other names the client (api.ClientHeader): temco's api takes no bodiless POST or
// DELETE without it, which keeps other sites' pages from sending them.
func (r *Runner) newRequest(ctx context.Context, method, p string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.url(p), body)
	if err != nil {
		return nil, err
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "application/json")
	} else {
		req.Header.Set(clientHeader, "temco")
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	return req, nil
}

// multipartBody is the form emcoctl sends for a document with files: the JSON as the
// field "metadata", then the file as part "file", or each of files as a part "files"
// (in order). Each part's filename is the file's base name, which EMCO's generic action
// controller uses as the data key.
func multipartBody(d *Document) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("metadata", string(d.body)); err != nil {
		return nil, "", err
	}
	part, names := "files", d.files
	if d.file != "" {
		part, names = "file", []string{d.file}
	}
	for _, name := range names {
		data, err := d.readFile(name)
		if err != nil {
			return nil, "", err
		}
		w, err := mw.CreateFormFile(part, filepath.Base(name))
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write(data); err != nil {
			return nil, "", err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// do sends a request and reads the answer; an error means there was no answer.
func (r *Runner) do(req *http.Request) (answer, error) {
	client := r.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, body: bytes.TrimSpace(data)}
	if !a.ok() {
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &m) == nil && m.Message != "" {
			a.message = m.Message
		} else {
			a.message = string(a.body) // EMCO's own services answer errors in plain text
		}
	}
	return a, nil
}
