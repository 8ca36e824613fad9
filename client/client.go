// Package client calls temco's REST API (EMCO's v2) from Go: one Client holds the API's
// address, the bearer token and temco's headers, sends JSON and multipart requests, and
// tells the API's refusals (4xx) apart from failures. Typed calls cover what temco's own
// callers do — resources by path, lifecycle operations, a target's status, a DIG's
// state and its snapshots — and the wire types they answer with are the ones the api
// itself answers with. It needs the standard library alone, so any program may import it.
package client

import (
	"net/http"
	"strings"
)

// The headers of temco's own (EMCO has none of them).
const (
	// HeaderClient names the program sending a request. temco's api takes a change with no
	// JSON body (an action, a DELETE) only with it or a JSON Content-Type, which a page of
	// another site cannot send without asking.
	HeaderClient = "X-Temco-Client"
	// HeaderOwner names who owns what a request writes (temco hub's objects): the api lets
	// nobody else change it, and refuses to let its owner take over what another created.
	HeaderOwner = "X-Temco-Owner"
	// HeaderActAs narrows a request to one project's authority ("project:<name>"): an admin
	// acting for a tenant (temco hub, for a namespace bound to a project) gets exactly that
	// tenant's rights.
	HeaderActAs = "X-Temco-Act-As"
)

// Client calls one temco API. Its zero value is not usable: set Base. A Client is safe
// for concurrent use; ActingAs and OwnedBy return narrowed copies.
type Client struct {
	// Base is the API's address without /v2, e.g. http://127.0.0.1:9015.
	Base string
	// Token is a bearer token; "" when the API has no authentication.
	Token string
	// Name is sent in HeaderClient with every request that is not a GET; "temco" when "".
	Name string
	// HTTP sends the requests; nil: http.DefaultClient.
	HTTP *http.Client

	actAs string // HeaderActAs's project
	owner string // HeaderOwner
}

// ActingAs is a copy of c whose requests carry project's authority alone (HeaderActAs);
// "" takes none, c's own.
func (c *Client) ActingAs(project string) *Client {
	cp := *c
	cp.actAs = project
	return &cp
}

// OwnedBy is a copy of c whose requests that write name owner as the owner of what they
// write (HeaderOwner); "" names none.
func (c *Client) OwnedBy(owner string) *Client {
	cp := *c
	cp.owner = owner
	return &cp
}

// url is the full URL of path below /v2 (path may carry a query).
func (c *Client) url(path string) string {
	return strings.TrimSuffix(c.Base, "/") + "/v2/" + strings.TrimPrefix(path, "/")
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) name() string {
	if c.Name != "" {
		return c.Name
	}
	return "temco"
}
