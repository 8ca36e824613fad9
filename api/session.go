package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// sessionView tells the dashboard who the caller is and what it may change.
type sessionView struct {
	Authentication bool     `json:"authentication"`
	Subject        string   `json:"subject,omitempty"`
	Admin          bool     `json:"admin"`
	Projects       []string `json:"projects"` // granted projects (a tenant's); admins may use every one
	TemporalUI     string   `json:"temporalUI,omitempty"`
	Namespace      string   `json:"namespace,omitempty"`
}

func (s *Server) registerSession(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodGet, path: "/session", summary: "The caller: subject, role and granted projects (temco's own, for the dashboard)",
		code: http.StatusOK, response: typeOf[sessionView]()}, s.session)
}

func (s *Server) session(c echo.Context) error {
	out := sessionView{Authentication: s.Auth != nil, Admin: true, Projects: []string{}, TemporalUI: s.TemporalUI, Namespace: s.Namespace}
	if p := principal(c); p != nil {
		out.Subject, out.Admin, out.Projects = p.Subject, p.Admin, append(out.Projects, p.Projects()...)
	}
	return c.JSON(http.StatusOK, out)
}
