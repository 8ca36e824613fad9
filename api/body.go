package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// Request size limits. Charts and profiles are stored inside one MongoDB document,
// whose hard limit is 16 MiB.
const (
	maxJSONBody      = 2 << 20
	maxMultipartBody = 10 << 20
)

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

// readJSON decodes the body into v. Content types other than JSON are refused with 415,
// except the ones curl and older EMCO clients send for JSON bodies.
func readJSON(c echo.Context, v any) error {
	switch mt := mediaType(c); {
	case mt == "", mt == echo.MIMEApplicationJSON, strings.HasSuffix(mt, "+json"),
		mt == echo.MIMETextPlain, mt == echo.MIMEApplicationForm:
	default:
		return httpErr(http.StatusUnsupportedMediaType, "content type %q is not supported here: send application/json", mt)
	}
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
	if err := r.ParseMultipartForm(maxMultipartBody); err != nil {
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
