package mysql

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// ReadCredentialsFile reads user= and password= from the [client] or
// [dbpilot] section of a my.cnf-style file. The file must not be readable by
// group or others.
func ReadCredentialsFile(path string) (Credentials, error) {
	var c Credentials
	if err := CheckPrivateFile(path); err != nil {
		return c, err
	}
	f, err := os.Open(path)
	if err != nil {
		return c, dbpilot.WrapError(dbpilot.ENOTFOUND, err, "credentials file")
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || s[0] == ';' {
			continue
		}
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			section = strings.ToLower(strings.TrimSpace(s[1 : len(s)-1]))
			continue
		}
		if section != "client" && section != "dbpilot" {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "user":
			c.User = v
		case "password":
			c.Password = v
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("read credentials file %s: %w", path, err)
	}
	return c, nil
}

// CheckPrivateFile fails when path is missing or readable by group or others.
func CheckPrivateFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return dbpilot.WrapError(dbpilot.ENOTFOUND, err, "secret file")
	}
	if st.Mode().Perm()&0o077 != 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "%s is readable by others (mode %o); run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	return nil
}
