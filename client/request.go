package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
)

// maxAnswer bounds what is read of an answer: a DIG's dashboard or status on thousands
// of clusters is megabytes; nothing the api answers comes near this.
const maxAnswer = 64 << 20

// Request is one call of the API.
type Request struct {
	Method string
	// Path is below /v2, e.g. /projects/p1, with its query if it has one.
	Path string
	// Body is sent as JSON; a json.RawMessage or []byte is sent as it is. With Files, it
	// is the form's "metadata" field.
	Body any
	// Files make the request multipart/form-data: Body as the field "metadata", then each
	// file as a part of its own, in order.
	Files []File
	// Multipart makes it multipart/form-data without Files too: a form whose files are
	// optional (a gac customization's), sent with its metadata alone.
	Multipart bool
}

// File is one file of a multipart request.
type File struct {
	Part string // the form's field: "file" when ""
	Name string // the part's file name: "file" when ""
	Data []byte
}

// Response is what the API answered, whatever its status.
type Response struct {
	Code int
	Body []byte // as received
	// Message is what an answer other than 2xx says: the API's {"message": ...}, else its
	// body (EMCO's own services answer errors in plain text); "" for a 2xx.
	Message string
}

// OK reports whether the answer is a 2xx.
func (r *Response) OK() bool { return r.Code >= 200 && r.Code < 300 }

// Send sends req and returns the answer whatever its status. The error is for a request
// that got no answer (the API unreachable, the connection lost) or could not be built.
func (c *Client) Send(ctx context.Context, req Request) (*Response, error) {
	hr, err := c.newRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, err := c.http().Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", req.Method, req.Path, err)
	}
	r := &Response{Code: resp.StatusCode, Body: data}
	if !r.OK() {
		r.Message, _ = messageOf(data)
	}
	return r, nil
}

// newRequest is req with temco's headers. A GET asks for JSON (EMCO answers an app's or
// a profile's GET with its file otherwise); any other request names the client
// (HeaderClient), and one with no body says JSON too.
func (c *Client) newRequest(ctx context.Context, req Request) (*http.Request, error) {
	body, contentType, err := encode(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.url(req.Path), body)
	if err != nil {
		return nil, err
	}
	if req.Method == http.MethodGet {
		hr.Header.Set("Accept", "application/json")
	} else {
		hr.Header.Set(HeaderClient, c.name())
		if contentType == "" {
			contentType = "application/json"
		}
	}
	if contentType != "" {
		hr.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.owner != "" && req.Method != http.MethodGet && req.Method != http.MethodHead {
		hr.Header.Set(HeaderOwner, c.owner) // a read writes nothing to own
	}
	if c.actAs != "" {
		hr.Header.Set(HeaderActAs, "project:"+c.actAs)
	}
	return hr, nil
}

// Do sends req and decodes a 2xx answer into out (nil: the answer is dropped). Any other
// answer is an *Error.
func (c *Client) Do(ctx context.Context, req Request, out any) error {
	r, err := c.Send(ctx, req)
	if err != nil {
		return err
	}
	if !r.OK() {
		return errorOf(req, r.Body, r.Code)
	}
	if out != nil && len(bytes.TrimSpace(r.Body)) > 0 {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return fmt.Errorf("%s /v2%s: the answer is not what temco answers: %w", req.Method, req.Path, err)
		}
	}
	return nil
}

// encode is req's body and its Content-Type ("" when it has none).
func encode(req Request) (io.Reader, string, error) {
	if len(req.Files) > 0 || req.Multipart {
		return multipartBody(req.Body, req.Files)
	}
	if req.Body == nil {
		return nil, "", nil
	}
	data, err := jsonOf(req.Body)
	if err != nil {
		return nil, "", err
	}
	return bytes.NewReader(data), "application/json", nil
}

// jsonOf is body as JSON: raw bytes as they are (a file's text, byte for byte).
func jsonOf(body any) ([]byte, error) {
	switch b := body.(type) {
	case json.RawMessage:
		return b, nil
	case []byte:
		return b, nil
	}
	return json.Marshal(body)
}

// multipartBody is the form temco's and EMCO's uploads take: the metadata as the field
// "metadata", then the files.
func multipartBody(metadata any, files []File) (io.Reader, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	meta, err := jsonOf(metadata)
	if err != nil {
		return nil, "", err
	}
	if err := mw.WriteField("metadata", string(meta)); err != nil {
		return nil, "", err
	}
	for _, f := range files {
		w, err := mw.CreateFormFile(or(f.Part, "file"), or(f.Name, "file"))
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write(f.Data); err != nil {
			return nil, "", err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return &buf, mw.FormDataContentType(), nil
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
