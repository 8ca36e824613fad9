package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"sigs.k8s.io/yaml"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The OpenAPI 3 document is built from what the routes are registered with, so it
// cannot drift from the router; a test checks that every route is in it.

// opDoc documents one route.
type opDoc struct {
	method, path string
	summary      string
	description  string       // longer text, when the summary is not enough
	body         reflect.Type // JSON request body (nil: none)
	bodyOptional bool         // the body may be left out
	multipart    bool         // multipart metadata + file instead of JSON
	bulk         bool         // a JSON body of many resources: an upload's size limit and deadline
	code         int          // success status
	response     reflect.Type // success body (nil: none)
	query        []string     // query parameters
	pages        bool         // a list answering pages (page.go)
	liveReads    bool         // may read clusters live, within the caller's rate (livereads.go)
	creates      bool         // a POST on a collection: it writes a new resource below the path's last (owner.go)
	// parentAtCreate: a creates route whose REST owner check of the parent is made on the
	// parent as the store's create reads it (restCreateBelow), sparing a read; only where
	// nothing else runs before the create (a kind without a check or a file).
	parentAtCreate bool
	// targetAtDelete: a delete whose owner check is made on the resource as the store's
	// delete marks it (store.DeleteIf), sparing a read: the default delete of a kind.
	targetAtDelete bool
	// noOwner: no owner is checked: the route writes no resource (a preview, a
	// controller's edits), or is an operator's decision on a running operation (a stop, a
	// rollout's approve, pause, resume or rollback), which the hub does not declare and
	// never undoes: a hub DIG's stages are approved over REST and from the dashboard.
	noOwner bool
	// ownerRequired: a report about a hub object (diagnostics.go): X-Temco-Owner is
	// required, and the handler checks it names the object (owner.go).
	ownerRequired bool
	// storeOnly: the route makes store round trips and nothing else (the resources'
	// create, list, get, replace and delete): it runs in its turn (admission.go).
	storeOnly bool
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// doc records a route's documentation (routes are registered once, at start).
func (s *Server) doc(d opDoc) { s.docs = append(s.docs, d) }

var paramRE = regexp.MustCompile(`:([A-Za-z]+)`)

// openAPI renders the document as YAML.
func (s *Server) openAPI() ([]byte, error) {
	paths := map[string]map[string]any{}
	for _, d := range s.docs {
		p := "/v2" + paramRE.ReplaceAllString(d.path, "{$1}")
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		op := map[string]any{"summary": d.summary, "operationId": operationID(d.method, d.path),
			"responses": s.withStatusSections(d, responses(d))}
		if d.description != "" {
			op["description"] = d.description
		}
		if d.pages {
			op["description"] = strings.TrimSpace(d.description + " " + listPageDescription)
		}
		var params []any
		for _, m := range paramRE.FindAllStringSubmatch(d.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range d.query {
			params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string"}})
		}
		switch {
		case d.ownerRequired:
			params = append(params, reportOwnerParam)
		case d.method != http.MethodGet && d.method != http.MethodHead && !d.noOwner:
			params = append(params, ownerParam)
		}
		if params != nil {
			op["parameters"] = params
		}
		switch {
		case d.multipart:
			content := map[string]any{"multipart/form-data": map[string]any{
				"schema": map[string]any{"type": "object", "required": []any{"metadata"}, "properties": map[string]any{
					"metadata": map[string]any{"type": "string", "description": "the resource as JSON"},
					"file":     map[string]any{"type": "string", "format": "binary"},
				}},
			}}
			if d.body != nil { // or JSON alone (an app whose chart comes by reference)
				content["application/json"] = map[string]any{"schema": schemaOf(d.body)}
			}
			op["requestBody"] = map[string]any{"required": true, "content": content}
		case d.body != nil:
			op["requestBody"] = map[string]any{"required": !d.bodyOptional, "content": map[string]any{"application/json": map[string]any{"schema": schemaOf(d.body)}}}
		}
		if publicPaths[p] {
			op["security"] = []any{} // answers without a token
		}
		paths[p][strings.ToLower(d.method)] = op
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "temco — EMCO v2 API", "version": "v2",
			"description": "EMCO's v2 REST API as temco serves it: clusters, projects, composite apps, intents, logical clouds and lifecycle operations run as Temporal workflows."},
		"paths": paths,
		"components": map[string]any{"schemas": map[string]any{"Error": map[string]any{"type": "object",
			"required": []any{"message"}, "properties": map[string]any{"message": map[string]any{"type": "string"}}}},
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
				"description": "when the server requires authentication (TEMCO_AUTH_ISSUER): a token with roles admin or project:<name>"}}},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(js)
}

// operationID names an operation after its method and path, e.g.
// getProjectsByProjectLogicalClouds.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		if seg == "" {
			continue
		}
		if strings.HasPrefix(seg, ":") {
			b.WriteString("By")
			seg = seg[1:]
		}
		for _, w := range strings.Split(seg, "-") {
			if w != "" {
				b.WriteString(strings.ToUpper(w[:1]) + w[1:])
			}
		}
	}
	return b.String()
}

// route registers a handler and documents it.
func (s *Server) route(g *echo.Group, d opDoc, h echo.HandlerFunc) {
	h = s.ownership(d, h)
	if d.storeOnly {
		h = s.turns.admit(h)
	}
	g.Add(d.method, d.path, h)
	s.doc(d)
}

func responses(d opDoc) map[string]any {
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
	}
	out := map[string]any{
		"400": errResp("malformed or invalid request"),
		"404": errResp("the resource or its parent does not exist"),
		"409": errResp("already exists, in use, or not allowed in the current lifecycle state"),
		"401": errResp("authentication required, or the token is invalid or expired"),
		"403": errResp("the token's roles do not grant this"),
		"503": errResp("MongoDB or Temporal did not answer; retry after the Retry-After seconds"),
	}
	if d.liveReads {
		tooMany := errResp("the caller's live reads of clusters are spent (status=ready, live=true): retry after the Retry-After seconds, or read the stored state")
		tooMany["headers"] = map[string]any{"Retry-After": map[string]any{"description": "seconds until a live read is allowed again",
			"schema": map[string]any{"type": "integer"}}}
		out["429"] = tooMany
	}
	if d.body != nil || d.multipart {
		out["413"] = errResp("request body too large")
		out["415"] = errResp("unsupported content type")
	}
	ok := map[string]any{"description": http.StatusText(d.code)}
	if d.response != nil {
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": schemaOf(d.response)}}
	}
	if d.pages {
		ok["headers"] = pageHeaders()
	}
	out[itoa(d.code)] = ok
	return out
}

// withStatusSections documents the Extensions' sections of a DIG's status (typed any in
// statusResult and dashboardView) in the answers that show them.
func (s *Server) withStatusSections(d opDoc, out map[string]any) map[string]any {
	status, dashboard := d.response == typeOf[statusResult](), d.response == typeOf[dashboardView]()
	if !status && !dashboard {
		return out
	}
	schema := out[itoa(d.code)].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	props := schema["properties"].(map[string]any)
	for _, sec := range s.hooks.status {
		if status && sec.status != nil || dashboard && sec.dashboard != nil {
			props[sec.name] = schemaOf(sec.doc)
		}
	}
	return out
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// schemaOf derives a JSON schema from a Go type through its json tags.
func schemaOf(t reflect.Type) map[string]any {
	switch t {
	case reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	case reflect.TypeFor[json.RawMessage](), reflect.TypeFor[json.Number]():
		return map[string]any{}
	}
	// A type with its own JSON encoding describes itself (rollout's "10m" and "25%").
	if h, ok := reflect.New(t).Interface().(interface{ JSONSchema() map[string]any }); ok {
		return h.JSONSchema()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		structFields(t, props)
		return map[string]any{"type": "object", "properties": props}
	}
	return map[string]any{}
}

func structFields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			structFields(f.Type, props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = schemaOf(f.Type)
	}
}

// serveOpenAPI answers GET /v2/openapi.yaml.
func (s *Server) serveOpenAPI(c echo.Context) error {
	y, err := s.openAPI()
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/yaml", y)
}

// Documented shapes of answers that are not stored resources.
type (
	opAccepted   = lifecycle.OpAccepted
	rollbackBody = temco.RollbackRequest
)

// An operation's 202 is the client module's OpAccepted too: this conversion does not
// compile once the two differ.
var _ = temco.OpAccepted(opAccepted{})
