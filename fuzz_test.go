package dbpilot

import "testing"

func FuzzParseInstanceKey(f *testing.F) {
	for _, s := range []string{"127.0.0.1:3306", "db1", "[::1]:3310", "::1", "host:", ":1", "a:b:c", "[::1", "h:65536", " x:1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseInstanceKey(s)
		if err != nil {
			if ErrorCode(err) != EINVALID {
				t.Fatalf("ParseInstanceKey(%q) error code %q", s, ErrorCode(err))
			}
			return
		}
		if k.Port < 1 || k.Port > 65535 || k.Host == "" {
			t.Fatalf("ParseInstanceKey(%q) = %+v", s, k)
		}
		again, err := ParseInstanceKey(k.String())
		if err != nil || again != k {
			t.Fatalf("round trip of %q: %+v -> %q -> %+v, %v", s, k, k.String(), again, err)
		}
	})
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"10.11.6-MariaDB-log", "8.0.36", "5.7", "", "1.2.3.4", "99999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		if v.Raw != s || v.Compare(v) != 0 {
			t.Fatalf("ParseVersion(%q) = %+v", s, v)
		}
	})
}
