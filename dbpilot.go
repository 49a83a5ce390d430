// Package dbpilot holds the domain vocabulary shared by every part of dbpilot:
// instance keys, flavors and versions, the observed state of a server, its
// replication channels, problems found by analysis, and error codes.
//
// It imports no database driver, no HTTP and no SQL: adapters (mysql, sandbox,
// sqlite, httpapi) translate to and from these types, and logic packages
// (topology, recovery) work on them alone.
package dbpilot

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// DefaultPort is the port assumed when a HOST is given without :PORT.
const DefaultPort = 3306

// InstanceKey names one server by the address dbpilot reaches it at.
type InstanceKey struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// String formats the key as host:port ([v6]:port for IPv6 literals).
func (k InstanceKey) String() string {
	return net.JoinHostPort(k.Host, strconv.Itoa(k.Port))
}

// IsZero reports whether the key is unset.
func (k InstanceKey) IsZero() bool { return k.Host == "" && k.Port == 0 }

// Normalized returns the key with "localhost" and "::1" mapped to 127.0.0.1 and the
// host lower-cased, so that the same local server reached under different names
// compares equal.
func (k InstanceKey) Normalized() InstanceKey {
	h := strings.ToLower(strings.TrimSuffix(k.Host, "."))
	switch h {
	case "localhost", "::1", "localhost.localdomain":
		h = "127.0.0.1"
	}
	return InstanceKey{Host: h, Port: k.Port}
}

// Equal reports whether k and o name the same server: equal once
// normalized ("localhost:3306" equals "127.0.0.1:3306").
func (k InstanceKey) Equal(o InstanceKey) bool { return k.Normalized() == o.Normalized() }

// ParseInstanceKey parses "host:port", "[ipv6]:port" or a bare "host" (port 3306).
func ParseInstanceKey(s string) (InstanceKey, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return InstanceKey{}, Errorf(EINVALID, "invalid instance address %q: empty; want HOST:PORT", orig)
	}
	host, portStr := s, ""
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return InstanceKey{}, Errorf(EINVALID, "invalid instance address %q: want HOST:PORT", orig)
		}
		host, portStr = h, p
		if portStr == "" {
			return InstanceKey{}, Errorf(EINVALID, "invalid instance address %q: port \"\" is not a number from 1 to 65535", orig)
		}
	} else if strings.Count(s, ":") > 1 {
		// A bare IPv6 literal without brackets: no port.
		if net.ParseIP(s) == nil {
			return InstanceKey{}, Errorf(EINVALID, "invalid instance address %q: want HOST:PORT ([v6]:PORT for IPv6)", orig)
		}
	}
	if !validHost(host) {
		return InstanceKey{}, Errorf(EINVALID, "invalid instance address %q: bad host %q", orig, host)
	}
	port := DefaultPort
	if portStr != "" {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 {
			return InstanceKey{}, Errorf(EINVALID, "invalid instance address %q: port %q is not a number from 1 to 65535", orig, portStr)
		}
		port = p
	}
	return InstanceKey{Host: host, Port: port}, nil
}

// validHost accepts IP addresses and host names (letters, digits, '-', '_', '.').
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Flavor is the server family.
type Flavor string

// Flavors dbpilot knows.
const (
	FlavorMariaDB Flavor = "mariadb"
	FlavorMySQL   Flavor = "mysql"
	FlavorPercona Flavor = "percona"
)

// IsMySQLFamily reports whether the flavor uses MySQL (UUID-based) GTIDs.
func (f Flavor) IsMySQLFamily() bool { return f == FlavorMySQL || f == FlavorPercona }

// Version is a server version such as 10.11.6 or 8.0.36.
type Version struct {
	Major int    `json:"major"`
	Minor int    `json:"minor"`
	Patch int    `json:"patch"`
	Raw   string `json:"raw"` // as the server reports it, e.g. "10.11.6-MariaDB-log"
}

// ParseVersion reads the leading "X.Y.Z" of a version string.
func ParseVersion(s string) (Version, error) {
	v := Version{Raw: s}
	core := s
	if i := strings.IndexFunc(core, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') }); i >= 0 {
		core = core[:i]
	}
	parts := strings.Split(core, ".")
	if len(parts) < 2 || parts[0] == "" {
		return Version{}, Errorf(EINVALID, "invalid server version %q: want X.Y[.Z]", s)
	}
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i := 0; i < len(parts) && i < 3; i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return Version{}, Errorf(EINVALID, "invalid server version %q: want X.Y[.Z]", s)
		}
		*nums[i] = n
	}
	return v, nil
}

// String returns "X.Y.Z".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare returns -1, 0 or 1 comparing v with o on major, minor and patch.
func (v Version) Compare(o Version) int {
	a := [3]int{v.Major, v.Minor, v.Patch}
	b := [3]int{o.Major, o.Minor, o.Patch}
	for i := range a {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

// AtLeast reports whether v >= major.minor.patch.
func (v Version) AtLeast(major, minor, patch int) bool {
	return v.Compare(Version{Major: major, Minor: minor, Patch: patch}) >= 0
}
