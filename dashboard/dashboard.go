// Package dashboard is the operator's web page (see README.md): static files embedded in
// the binary, served by temco api. The page reads and operates through the REST API.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// Path is where temco api serves the page.
const Path = "/dashboard/"

//go:embed web
var files embed.FS

// Handler serves the page's files under Path.
func Handler() http.Handler {
	web, err := fs.Sub(files, "web")
	if err != nil {
		panic(err) // the embedded tree always has web/
	}
	static := http.StripPrefix(Path, http.FileServer(http.FS(web)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The page loads nothing from elsewhere and may not be framed; it calls only its
		// own origin's API (and links to the Temporal UI, which needs no permission).
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache") // a new temco's page replaces the old one at once
		static.ServeHTTP(w, r)
	})
}
