package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Server is a server installation: its binaries, flavor and version.
type Server struct {
	Flavor     dbpilot.Flavor `json:"flavor"`
	Version    string         `json:"version"`     // X.Y.Z
	VersionRaw string         `json:"version_raw"` // as --version prints it
	Mysqld     string         `json:"mysqld"`
	InstallDB  string         `json:"install_db,omitempty"` // MariaDB only
	Basedir    string         `json:"basedir,omitempty"`
}

// ParsedVersion returns the version as a dbpilot.Version.
func (s Server) ParsedVersion() dbpilot.Version {
	v, _ := dbpilot.ParseVersion(s.Version)
	return v
}

// searchDirs are where server binaries are looked for after PATH.
var searchDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/local/mariadb/bin", "/opt/mysql/bin", "/opt/mariadb/bin"}

// FindServer locates a server under basedir (basedir/bin, basedir/sbin,
// basedir/libexec) or, with no basedir, on PATH and the usual system
// directories; mariadbd is preferred over mysqld. It runs the binary's
// --version to learn flavor and version.
func FindServer(ctx context.Context, basedir string) (Server, error) {
	var dirs []string
	if basedir != "" {
		abs, err := filepath.Abs(basedir)
		if err != nil {
			return Server{}, dbpilot.WrapError(dbpilot.EINVALID, err, "sandbox: basedir %q", basedir)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return Server{}, dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: basedir %s is not a directory", abs)
		}
		basedir = abs
		dirs = []string{filepath.Join(abs, "bin"), filepath.Join(abs, "sbin"), filepath.Join(abs, "libexec"), abs}
	} else {
		dirs = append(filepath.SplitList(os.Getenv("PATH")), searchDirs...)
	}
	find := func(names ...string) string {
		for _, name := range names {
			for _, d := range dirs {
				if d == "" {
					continue
				}
				p := filepath.Join(d, name)
				if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return p
				}
			}
		}
		return ""
	}
	mysqld := find("mariadbd", "mysqld")
	if mysqld == "" {
		where := "PATH and " + strings.Join(searchDirs, ", ")
		if basedir != "" {
			where = basedir + "/{bin,sbin,libexec}"
		}
		return Server{}, dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: no server binary (mariadbd or mysqld) found in %s; install mariadb-server (Debian: apt-get install mariadb-server) or pass --basedir", where)
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, mysqld, "--version").CombinedOutput()
	if err != nil {
		return Server{}, fmt.Errorf("sandbox: run %s --version: %w: %s", mysqld, err, strings.TrimSpace(string(out)))
	}
	s, err := ParseServerVersion(string(out))
	if err != nil {
		return Server{}, fmt.Errorf("sandbox: %s: %w", mysqld, err)
	}
	s.Mysqld = mysqld
	s.Basedir = basedir
	if s.Flavor == dbpilot.FlavorMariaDB {
		s.InstallDB = find("mariadb-install-db", "mysql_install_db")
		if s.InstallDB == "" && basedir != "" {
			if p := filepath.Join(basedir, "scripts", "mariadb-install-db"); fileExists(p) {
				s.InstallDB = p
			}
		}
		if s.InstallDB == "" {
			return Server{}, dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: found %s but not mariadb-install-db next to it", mysqld)
		}
	}
	return s, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var versionRE = regexp.MustCompile(`Ver\s+(\d+\.\d+\.\d+)(\S*)`)

// ParseServerVersion reads `mysqld --version` output, e.g.
//
//	mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)
//	/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)
//	/usr/sbin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)
func ParseServerVersion(out string) (Server, error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return Server{}, fmt.Errorf("cannot read the server version from %q", strings.TrimSpace(out))
	}
	s := Server{Version: m[1], VersionRaw: strings.TrimSpace(out)}
	switch {
	case strings.Contains(strings.ToLower(out), "mariadb"):
		s.Flavor = dbpilot.FlavorMariaDB
	case strings.Contains(out, "Percona"):
		s.Flavor = dbpilot.FlavorPercona
	default:
		s.Flavor = dbpilot.FlavorMySQL
	}
	v := s.ParsedVersion()
	if s.Flavor == dbpilot.FlavorMariaDB && !v.AtLeast(10, 3, 0) {
		return s, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "MariaDB %s is too old: sandboxes need 10.3 or newer (built-in semi-sync, gtid_strict_mode)", s.Version)
	}
	if s.Flavor != dbpilot.FlavorMariaDB && !v.AtLeast(5, 7, 0) {
		return s, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "MySQL %s is too old: sandboxes need 5.7 or newer (GTID auto-positioning)", s.Version)
	}
	return s, nil
}
