package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
)

// OwnerHeader carries the owner of the resources a request writes (api/owner.go): the
// REST API refuses to let anyone else change what the hub owns, and the hub to take over
// what REST created.
const OwnerHeader = "X-Temco-Owner"

// ActAsHeader narrows a request to one project's authority (api.HeaderActAs): sent with
// every request made for an object of a namespace bound to a project (binding.go).
const ActAsHeader = "X-Temco-Act-As"

// REST calls temco's REST API: the hub writes nothing to temco's store itself, so every
// object goes through the validation, tenancy and workflows REST clients get.
type REST struct {
	Base string // e.g. http://127.0.0.1:9015
	// Token is an admin's bearer token ("" when the API has no authentication). Requests
	// for a namespaced object are narrowed to its project (ActAsHeader).
	Token string
	HTTP  *http.Client
}

// Refusal is a 4xx answer: the object is wrong (or waits for another), not the hub.
type Refusal struct {
	Code    int
	Message string
}

func (e *Refusal) Error() string { return e.Message }

// IsRefusal reports whether err is a 4xx answer, with that answer.
func IsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	return r, errors.As(err, &r)
}

// request is one call; file set makes it multipart (metadata part + file part).
type request struct {
	method, path, owner string
	body                any
	file                []byte
	multipart           bool
}

// do sends req and decodes a 2xx answer into out (nil: drop it). A 4xx is a *Refusal
// whose message is the API's; a 404 on a GET is (false, nil).
func (r *REST) do(ctx context.Context, req request, out any) (bool, error) {
	var body io.Reader
	ctype := ""
	switch {
	case req.multipart:
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		meta, err := json.Marshal(req.body)
		if err != nil {
			return false, err
		}
		if err := w.WriteField("metadata", string(meta)); err != nil {
			return false, err
		}
		fw, err := w.CreateFormFile("file", "file")
		if err != nil {
			return false, err
		}
		if _, err := fw.Write(req.file); err != nil {
			return false, err
		}
		if err := w.Close(); err != nil {
			return false, err
		}
		body, ctype = &buf, w.FormDataContentType()
	case req.body != nil:
		b, err := json.Marshal(req.body)
		if err != nil {
			return false, err
		}
		body, ctype = bytes.NewReader(b), "application/json"
	case req.method != http.MethodGet:
		ctype = "application/json" // the API takes no bodiless write without it (a page elsewhere cannot send it)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, strings.TrimSuffix(r.Base, "/")+"/v2"+req.path, body)
	if err != nil {
		return false, err
	}
	if ctype != "" {
		hr.Header.Set("Content-Type", ctype)
	}
	if r.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.Token)
	}
	if req.owner != "" {
		hr.Header.Set(OwnerHeader, req.owner)
	}
	if p := actingProject(ctx); p != "" {
		hr.Header.Set(ActAsHeader, "project:"+p)
	}
	resp, err := r.HTTP.Do(hr)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return false, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && req.method == http.MethodGet:
		return false, nil
	case resp.StatusCode >= 500:
		return false, fmt.Errorf("%s %s: %s: %s", req.method, req.path, resp.Status, apiMessage(data))
	case resp.StatusCode >= 400:
		return false, &Refusal{Code: resp.StatusCode, Message: apiMessage(data)}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return false, fmt.Errorf("%s %s: decode the answer: %w", req.method, req.path, err)
		}
	}
	return true, nil
}

// apiMessage is the API's {"message": ...}, else the body itself (bounded).
func apiMessage(b []byte) string {
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &m) == nil && m.Message != "" {
		return m.Message
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return s
}
