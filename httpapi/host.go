package httpapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// HostPolicy is the Host headers serve answers, against DNS rebinding: a
// page of any site, its name pointed at 127.0.0.1 after it loaded, could
// otherwise read the API from a browser on serve's machine (the browser
// sends the site's own name as Host). Allowed: the address serve listens
// on; localhost and loopback addresses with its port; any IP address with
// its port when it listens on every address (a rebinding needs a name);
// and the names configured (allowed_hosts: "name" with any port, or
// "name:port"). A request without a Host header (HTTP/1.0; never from a
// browser) is allowed.
type HostPolicy struct {
	listen    string // the listen address, as configured
	host      string // its host, lower case, without brackets; "" for every address
	port      string
	names     map[string]bool // allowed with any port
	hostPorts map[string]bool // allowed with this port only ("name:port")
}

// NewHostPolicy returns the policy of a server listening on listen
// (HOST:PORT, the port the one actually bound) that also answers the
// allowed names ("name" or "name:port").
func NewHostPolicy(listen string, allowed []string) (*HostPolicy, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "http: listen address %q is not HOST:PORT", listen)
	}
	p := &HostPolicy{listen: listen, host: normalHost(host), port: port, names: map[string]bool{}, hostPorts: map[string]bool{}}
	if ip := net.ParseIP(p.host); ip != nil && ip.IsUnspecified() {
		p.host = ""
	}
	for _, a := range allowed {
		h, ap, err := net.SplitHostPort(a)
		switch {
		case err == nil && normalHost(h) != "" && !strings.ContainsAny(h, "/@ ") && validPort(ap):
			p.hostPorts[net.JoinHostPort(normalHost(h), ap)] = true
		case err != nil && a != "" && !strings.ContainsAny(a, "/:@ "):
			p.names[normalHost(a)] = true
		default:
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "http: allowed host %q is not a NAME or NAME:PORT", a)
		}
	}
	return p, nil
}

// validPort reports whether p is a TCP port number.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}

// normalHost lowers a host name and drops IPv6 brackets and a final dot.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// Allows reports whether a request with this Host header is answered.
func (p *HostPolicy) Allows(hostHeader string) bool {
	if hostHeader == "" {
		return true
	}
	host, port, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host, port = hostHeader, "80" // no port: http's default
	}
	host = normalHost(host)
	if p.names[host] || p.hostPorts[net.JoinHostPort(host, port)] {
		return true
	}
	if port != p.port {
		return false
	}
	if host == "localhost" || host == p.host && p.host != "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || p.host == "")
}

// Guard wraps h: a request whose Host the policy does not allow gets 421
// Misdirected Request with a one-line JSON error, and h never sees it.
func (p *HostPolicy) Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.Allows(r.Host) {
			h.ServeHTTP(w, r)
			return
		}
		b, _ := json.Marshal(errorBody{Code: dbpilot.EAUTH, Error: fmt.Sprintf(
			"host %q is not one dbpilot serve answers to (it listens on %s); to reach it by that name, add it to allowed_hosts in serve's configuration", r.Host, p.listen)})
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusMisdirectedRequest)
		_, _ = w.Write(append(b, '\n'))
	})
}
