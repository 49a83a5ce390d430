package remotewrite

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// ParseURL checks a receiver or query URL: http or https with a host.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The input may hold credentials: name it redacted when it parses.
		shown := "(unparsable)"
		if err == nil {
			shown = Redacted(u)
		}
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "%s is not an http(s) URL like http://HOST:PORT/api/v1/write", shown)
	}
	if u.Fragment != "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "%s: a URL with a fragment (#...)", Redacted(u))
	}
	return u, nil
}

// Redacted returns u as logs and labels show it: scheme, host and path,
// without user info or query (where tokens hide).
func Redacted(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return v.String()
}

// CheckHeader refuses a custom header that the protocol or the
// authentication options set.
func CheckHeader(name string) error {
	switch http.CanonicalHeaderKey(name) {
	case "Content-Encoding", "Content-Type", "Content-Length", "X-Prometheus-Remote-Write-Version", "User-Agent", "Host":
		return fmt.Errorf("header %s is set by the protocol", name)
	case "Authorization":
		return errors.New("header Authorization: use basic_auth or bearer_token, which keep it out of the logs")
	}
	if name == "" || strings.ContainsAny(name, " :\r\n") {
		return fmt.Errorf("invalid header name %q", name)
	}
	return nil
}
