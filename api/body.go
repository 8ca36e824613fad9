package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Request size limits. Charts and profiles are stored inside one MongoDB document,
// whose hard limit is 16 MiB.
const (
	maxJSONBody   = 2 << 20
	maxUploadBody = 10 << 20 // multipart, and JSON imports of many resources (opDoc.bulk)
)

// bodyRules checks a request's body before its route's handler, by what the route reads
// (routes: "METHOD /v2/path" to its doc): an upload (multipart) gets the larger size
// limit and a longer deadline; any other body must be JSON, with its Content-Type. A
// request that changes something and has no body (an action, a DELETE) must carry a JSON
// Content-Type or ClientHeader. Browsers send forms, text/plain and bodiless POSTs to any
// origin without a CORS preflight: refusing them keeps a page elsewhere from changing
// anything; uploads, which a form can send too, are left to checkOrigin.
func bodyRules(routes map[string]opDoc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		json, upload := limitBody(maxJSONBody)(next), limitBody(maxUploadBody)(next)
		return func(c echo.Context) error {
			r := c.Request()
			d := routes[r.Method+" "+c.Path()]
			if slices.Contains(d.query, "waitForResult") && c.QueryParam("waitForResult") == "true" {
				// EMCO's status routes then answer when the workflow ends, or when the
				// client leaves (the request's context): no deadline.
				extendDeadlines(c, time.Time{}, false)
			}
			if safeMethods[r.Method] {
				return json(c)
			}
			mt, err := requestMediaType(r)
			if r.ContentLength == 0 || !bodyMethods[r.Method] {
				if err == nil && isJSON(mt) || r.Header.Get(ClientHeader) != "" {
					return json(c)
				}
				return httpErr(http.StatusUnsupportedMediaType, "%s: a %s without a JSON body needs Content-Type: application/json or %s with your client's name",
					typeSent(r), r.Method, ClientHeader)
			}
			ok, want := err == nil && isJSON(mt), "the body as JSON, with Content-Type: application/json"
			if d.multipart {
				jsonToo := d.body != nil && ok // a multipart route that also takes JSON (apps by reference)
				ok, want = err == nil && mt == echo.MIMEMultipartForm || jsonToo, `multipart/form-data with the parts "metadata" and "file"`
			}
			switch {
			case !ok:
				return httpErr(http.StatusUnsupportedMediaType, "%s: send %s", typeSent(r), want)
			case d.multipart || d.bulk:
				extendDeadlines(c, time.Now().Add(uploadTimeout), true)
				return upload(c)
			}
			return json(c)
		}
	}
}

// safeMethods change nothing: every other method is held to bodyRules' types.
var safeMethods = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodOptions: true}

// bodyMethods are the methods whose bodies handlers read.
var bodyMethods = map[string]bool{http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true}

// typeSent says what Content-Type the request named, for a refusal.
func typeSent(r *http.Request) string {
	if ct := r.Header.Get(echo.HeaderContentType); ct != "" {
		return "content type " + clipQuote(ct) + " is not accepted here"
	}
	return "the request has no Content-Type"
}

// requestMediaType is the request's media type, lower case ("" without a Content-Type).
func requestMediaType(r *http.Request) (string, error) {
	ct := r.Header.Get(echo.HeaderContentType)
	if ct == "" {
		return "", nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if errors.Is(err, mime.ErrInvalidMediaParameter) { // the type is known: the handler judges the parameters
		err = nil
	}
	return mt, err
}

// isJSON: application/json or a JSON-based type (application/merge-patch+json).
func isJSON(mt string) bool {
	return mt == echo.MIMEApplicationJSON || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// extendDeadlines gives a request that legitimately takes long (an upload, a wait for a
// workflow) more than the server's ReadTimeout and WriteTimeout; the zero time is none.
func extendDeadlines(c echo.Context, t time.Time, read bool) {
	rc := http.NewResponseController(c.Response())
	// Errors are http.ErrNotSupported: a writer without deadlines (a test's recorder).
	if read {
		_ = rc.SetReadDeadline(t)
	}
	_ = rc.SetWriteDeadline(t)
}

// limitBody refuses bodies over limit with 413: at once when Content-Length says so,
// otherwise when reading crosses the limit (see tooLarge).
func limitBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > limit {
				return tooLargeErr(limit)
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
			return next(c)
		}
	}
}

func tooLargeErr(limit int64) *echo.HTTPError {
	return httpErr(http.StatusRequestEntityTooLarge, "request body is larger than the limit of %s", size(limit))
}

func size(n int64) string {
	if n >= 1<<20 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// tooLarge converts a read error caused by the body limit into a 413.
func tooLarge(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return tooLargeErr(mb.Limit)
	}
	return nil
}

// mediaType is the request's Content-Type without parameters ("" when absent or unparsable).
func mediaType(c echo.Context) string {
	mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil {
		return ""
	}
	return mt
}

// readJSON decodes the body into v (bodyRules has refused content types other than JSON).
func readJSON(c echo.Context, v any) error {
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		if e := tooLarge(err); e != nil {
			return e
		}
		return badRequest("reading the request body: %v", err)
	}
	return decodeJSON(data, "request body", v)
}

// decodeJSON decodes exactly one JSON value; what names the input in messages.
func decodeJSON(data []byte, what string, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return badRequest("%s is empty: a JSON object is required", what)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return badRequest("%s is not valid JSON: %s", what, jsonErr(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("%s is not valid JSON: unexpected data after the JSON object", what)
	}
	return nil
}

func jsonErr(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%v (at byte %d)", syn, syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typ.Field, typ.Type, typ.Value)
		}
		return fmt.Sprintf("expected %s, not %s", typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return err.Error()
}

// multipartForm parses a multipart/form-data body: the JSON "metadata" part and the
// optional "file" part.
type multipartForm struct {
	metadata []byte
	file     []byte
	hasFile  bool
	files    []NamedFile // the "files" parts (gac customizations)
}

// NamedFile is one "files" part of a multipart body, by its file name.
type NamedFile struct {
	Name    string `json:"name"`
	Content []byte `json:"content"`
}

func readMultipart(c echo.Context) (*multipartForm, error) {
	if mt := mediaType(c); mt != echo.MIMEMultipartForm {
		return nil, httpErr(http.StatusUnsupportedMediaType,
			"content type %q is not supported here: send multipart/form-data with parts \"metadata\" and \"file\"", mt)
	}
	r := c.Request()
	if err := r.ParseMultipartForm(maxUploadBody); err != nil {
		if e := tooLarge(err); e != nil {
			return nil, e
		}
		return nil, badRequest("malformed multipart body: %v", err)
	}
	defer r.MultipartForm.RemoveAll()
	f := &multipartForm{}
	if md := r.MultipartForm.Value["metadata"]; len(md) > 0 {
		f.metadata = []byte(md[0])
	} else if fh := r.MultipartForm.File["metadata"]; len(fh) > 0 {
		data, err := readPart(fh[0].Open)
		if err != nil {
			return nil, err
		}
		f.metadata = data
	} else {
		return nil, badRequest("multipart part \"metadata\" is missing")
	}
	if fh := r.MultipartForm.File["file"]; len(fh) > 0 {
		data, err := readPart(fh[0].Open)
		if err != nil {
			return nil, err
		}
		f.file, f.hasFile = data, true
	} else if v := r.MultipartForm.Value["file"]; len(v) > 0 {
		f.file, f.hasFile = []byte(v[0]), true
	}
	for _, fh := range r.MultipartForm.File["files"] {
		data, err := readPart(fh.Open)
		if err != nil {
			return nil, err
		}
		f.files = append(f.files, NamedFile{Name: fh.Filename, Content: data})
	}
	return f, nil
}

func readPart[F io.ReadCloser](open func() (F, error)) ([]byte, error) {
	rc, err := open()
	if err != nil {
		return nil, badRequest("reading multipart part: %v", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, badRequest("reading multipart part: %v", err)
	}
	return data, nil
}
