package api

import (
	"encoding/base64"
	"net/http"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/core/store"
)

// Lists answer EMCO's plain JSON array, sorted by id, of at most limit items; when more
// remain, headers name the next page: X-Continue its token, Link (RFC 8288) its URL.
// EMCO clients, which send neither parameter, get the whole list up to listCap.

// listCap bounds every list answer, and is its default: EMCO clients do not page, so it
// covers the largest collection temco is built for, 10,000 clusters under one provider
// (a few MiB of JSON: lists leave out kubeconfigs, charts and profiles).
const listCap = 10000

// headerContinue carries the next page's token.
const headerContinue = "X-Continue"

// maxContinueLen bounds a token: a composite app's name and version, or a diagnostics
// entry's path and object, base64-encoded.
const maxContinueLen = 2048

var listQueryParams = []string{"limit", "continue"}

// listPage is a list request's page: up to limit items after the one named after.
type listPage struct {
	limit int
	after string // the previous page's last name, relative to the collection ("": from the start)
}

func parseListPage(c echo.Context) (listPage, error) {
	p := listPage{limit: listCap}
	params := c.QueryParams()
	if v, ok := params["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if len(v) != 1 || err != nil || n < 1 || n > listCap {
			return p, badRequest("limit=%q is invalid: use one whole number from 1 to %d", strings.Join(v, ","), listCap)
		}
		p.limit = n
	}
	if v, ok := params["continue"]; ok {
		// The token is only a start point inside the route's own query (its parent, kind
		// and the caller's grants), so any value is harmless: it is checked for shape only.
		after, err := base64.RawURLEncoding.DecodeString(v[0])
		if len(v) != 1 || len(v[0]) > maxContinueLen || err != nil || !utf8.Valid(after) {
			return p, badRequest("continue=%.40q is invalid: pass the %s header of the previous page as it is", strings.Join(v, ","), headerContinue)
		}
		p.after = string(after)
	}
	return p, nil
}

// listKeys maps a page's token to a document _id of the listed query and back.
type listKeys struct {
	id   func(name string) string
	name func(*store.Doc) string
}

// collKeys are the keys of the documents of collection coll: the token holds the name
// below coll, so it cannot point outside it.
func collKeys(coll string) listKeys {
	return listKeys{
		id:   func(name string) string { return coll + "/" + name },
		name: func(d *store.Doc) string { return strings.TrimPrefix(d.ID, coll+"/") },
	}
}

// labelKeys are the keys of the labels named label of the clusters in coll, listed as
// their clusters' names.
func labelKeys(coll, label string) listKeys {
	return listKeys{
		id:   func(cluster string) string { return coll + "/" + cluster + "/labels/" + label },
		name: func(d *store.Doc) string { return path.Base(d.Parent) },
	}
}

// query bounds q to the page. It reads one more than the limit: that one tells whether
// more remain.
func (p listPage) query(q store.Query, k listKeys) store.Query {
	if p.after != "" {
		q.After = k.id(p.after)
	}
	q.Limit = p.limit + 1
	return q
}

// cut trims what query read to the page and, when more remain, names the next page in
// the response's headers.
func (p listPage) cut(c echo.Context, docs []*store.Doc, k listKeys) []*store.Doc {
	if len(docs) <= p.limit {
		return docs
	}
	docs = docs[:p.limit]
	linkNext(c, k.name(docs[len(docs)-1]))
	return docs
}

// linkNext names, in the response's headers, the page that follows the one answered,
// whose last item after names.
func linkNext(c echo.Context, after string) {
	token := base64.RawURLEncoding.EncodeToString([]byte(after))
	next := *c.Request().URL
	q := next.Query()
	q.Set("continue", token)
	next.RawQuery = q.Encode()
	h := c.Response().Header()
	h.Set(headerContinue, token)
	h.Set("Link", "<"+next.RequestURI()+`>; rel="next"`)
}

// listDoc documents a list route's paging.
func listDoc(d opDoc) opDoc {
	d.query = append(append([]string{}, d.query...), listQueryParams...)
	d.pages = true
	return d
}

// listPageDescription is the paging of every list, for the OpenAPI document.
var listPageDescription = "Answers at most limit items (1 to " + strconv.Itoa(listCap) + ", default " + strconv.Itoa(listCap) +
	"), sorted by name. When more remain, header " + headerContinue + " holds a token to pass as continue= (with the same filters) " +
	`for the next page, and Link the next page's URL (rel="next").`

// pageHeaders documents the headers of a list's answer.
func pageHeaders() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		headerContinue: map[string]any{"description": "present when more items remain: pass it as continue=", "schema": str},
		"Link":         map[string]any{"description": `present when more items remain: <next page's URL>; rel="next"`, "schema": str},
	}
}

// listAnswer writes a page of stored resources as EMCO's JSON array.
func listAnswer(c echo.Context, p listPage, docs []*store.Doc, k listKeys) error {
	return c.JSONBlob(http.StatusOK, bodies(p.cut(c, docs, k)))
}

// grantedProjects are the ids of the projects a tenant may list.
func grantedProjects(p *auth.Principal) []string {
	ids := []string{} // not nil: none granted lists none
	for _, name := range p.Projects() {
		ids = append(ids, "/projects/"+name)
	}
	return ids
}
