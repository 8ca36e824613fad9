package emcoctl

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/temco/temco/client"
)

// answer is what the API said to one request.
type answer struct {
	status  int
	message string // on failure: the API's {"message": ...}, else its body
	body    []byte
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// failed: refused, or accepted but the awaited operation then failed (its message says so).
func (a answer) failed() bool { return !a.ok() || a.message != "" }

// api is the client emcoctl's requests go through: a GET asks for JSON, which EMCO needs
// to answer an app or profile with its metadata rather than its file; every other
// request names the client, temco, without which temco's api takes no bodiless POST or
// DELETE (it keeps other sites' pages from sending them).
func (r *Runner) api() *client.Client {
	return &client.Client{Base: r.API, Token: r.Token, Name: "temco", HTTP: r.HTTP}
}

// request is a step's request: a document sent is its JSON as it was written (with its
// files, a multipart form); delete's terminate is an empty JSON request.
func request(s step) (client.Request, error) {
	req := client.Request{Method: s.method, Path: s.path}
	if !s.send {
		return req, nil
	}
	files, err := filesOf(s.doc)
	req.Body, req.Files = json.RawMessage(s.doc.body), files
	return req, err
}

// filesOf are the files emcoctl sends with a document: its file as the part "file", or
// each of its files as a part "files" (in order). Each part's filename is the file's
// base name, which EMCO's generic action controller uses as the data key.
func filesOf(d *Document) ([]client.File, error) {
	part, names := "files", d.files
	if d.file != "" {
		part, names = "file", []string{d.file}
	}
	var out []client.File
	for _, name := range names {
		data, err := d.readFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, client.File{Part: part, Name: filepath.Base(name), Data: data})
	}
	return out, nil
}

// send sends a request and reads the answer; an error means there was no answer.
func (r *Runner) send(ctx context.Context, req client.Request) (answer, error) {
	resp, err := r.api().Send(ctx, req)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.Code, message: resp.Message, body: bytes.TrimSpace(resp.Body)}, nil
}
