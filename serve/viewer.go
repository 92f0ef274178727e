package serve

import (
	_ "embed"
	"net/http"
)

// viewerPage is the attention viewer: one self-contained HTML page (no
// build step, nothing fetched from elsewhere) that calls /v1/models and
// /v1/translate and draws the attention of the answer as a heat map.
//
//go:embed viewer/index.html
var viewerPage []byte

func serveViewer(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
	w.Write(viewerPage)
}
