// Package web serves dbpilot's web console: a single page, embedded in the
// binary, that reads and acts only through serve's JSON API (package
// httpapi) and its PromQL API, as the CLI's --server client does.
//
// The page's addresses are bookmarkable: /, /clusters/{name},
// /instances/{host:port}, /recoveries/{id}; each answers the same
// index.html and the page's router draws the view. Its files are under
// /assets/. The HTML and the assets hold no data, so they never need the API
// token, even when reads do; the page asks for the token when the API answers
// 401. See CONTRACT.md for what the page, this handler and the browser tests
// agree on.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
)

//go:embed static
var files embed.FS

// pagePrefixes are the page routes; any path below them is the page too,
// which says "not found" itself when the thing named does not exist.
var pagePrefixes = []string{"/clusters/", "/instances/", "/recoveries/"}

// asset is one embedded file, ready to send.
type asset struct {
	body, gz    []byte // gz is nil when compressing does not pay
	contentType string
	etag        string
}

// Handler serves the console. It fails only if the embedded files are
// broken (a build error).
type Handler struct {
	assets map[string]*asset // by path below /assets/
	index  *asset
	csp    string
}

// NewHandler loads and compresses the embedded files once.
func NewHandler() (*Handler, error) {
	root, err := fs.Sub(files, "static")
	if err != nil {
		return nil, fmt.Errorf("web: embedded files: %w", err)
	}
	return newHandler(root)
}

func newHandler(root fs.FS) (*Handler, error) {
	h := &Handler{assets: map[string]*asset{}}
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		a := newAsset(p, b)
		if p == "index.html" {
			h.index = a
			return nil
		}
		h.assets[p] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: embedded files: %w", err)
	}
	if h.index == nil {
		return nil, fmt.Errorf("web: embedded files: index.html missing")
	}
	h.csp = contentSecurityPolicy(h.index.body)
	return h, nil
}

func newAsset(name string, b []byte) *asset {
	sum := sha256.Sum256(b)
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // not left to the machine's mime.types
	case ".js", ".mjs":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".html":
		ct = "text/html; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	case ".png":
		ct = "image/png"
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	a := &asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	if strings.HasPrefix(ct, "text/") || strings.Contains(ct, "svg") || strings.HasSuffix(name, ".json") {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		if buf.Len() < len(b)*9/10 {
			a.gz = buf.Bytes()
		}
	}
	return a
}

// isPage reports whether p is one of the page's addresses (answered with
// the page and status 200).
func isPage(p string) bool {
	if p == "/" {
		return true
	}
	for _, pre := range pagePrefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// ServeHTTP answers GET and HEAD: the assets under /assets/, the page for
// its addresses, and the page with status 404 for any other path (the page
// says what was not found).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if name, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok {
		a := h.assets[name]
		if a == nil {
			http.Error(w, "no such asset", http.StatusNotFound)
			return
		}
		// Revalidated each time (a 304 when unchanged): module imports
		// carry no version, and a new binary must never mix old files.
		hd.Set("Cache-Control", "no-cache")
		h.send(w, r, a, http.StatusOK)
		return
	}
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-cache")
	status := http.StatusOK
	if !isPage(r.URL.Path) {
		status = http.StatusNotFound
	}
	h.send(w, r, h.index, status)
}

func (h *Handler) send(w http.ResponseWriter, r *http.Request, a *asset, status int) {
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("ETag", a.etag)
	hd.Add("Vary", "Accept-Encoding")
	if status == http.StatusOK && etagMatch(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reads Accept-Encoding: gzip unless its q is 0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}

// inlineScripts matches the page's inline scripts (an import map, say),
// whose hashes the Content-Security-Policy allows.
var inlineScripts = regexp.MustCompile(`(?s)<script\b[^>]*>(.+?)</script>`)

// contentSecurityPolicy allows scripts from this origin and the page's own
// inline scripts by hash, nothing else; no framing (clickjacking of the
// action buttons).
func contentSecurityPolicy(index []byte) string {
	script := "'self'"
	for _, m := range inlineScripts.FindAllSubmatch(index, -1) {
		sum := sha256.Sum256(m[1])
		script += " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return "default-src 'self'; script-src " + script + "; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
}

// Asset returns the embedded file static/name, e.g.
// "vendor/uplot/uPlot.esm.min.js": the bench report (package loadgen)
// draws its charts with the console's chart library.
func Asset(name string) ([]byte, error) {
	b, err := files.ReadFile(path.Join("static", name))
	if err != nil {
		return nil, fmt.Errorf("web: embedded file %s: %w", name, err)
	}
	return b, nil
}
