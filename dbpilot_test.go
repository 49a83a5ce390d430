package dbpilot

import (
	"strings"
	"testing"
)

func TestParseInstanceKey(t *testing.T) {
	tests := []struct {
		in      string
		want    InstanceKey
		wantErr string
	}{
		{"127.0.0.1:3306", InstanceKey{"127.0.0.1", 3306}, ""},
		{"db1.example.com:3307", InstanceKey{"db1.example.com", 3307}, ""},
		{"db1", InstanceKey{"db1", 3306}, ""},
		{"[::1]:3310", InstanceKey{"::1", 3310}, ""},
		{"::1", InstanceKey{"::1", 3306}, ""},
		{" 10.0.0.1:1 ", InstanceKey{"10.0.0.1", 1}, ""},
		{"", InstanceKey{}, "empty"},
		{"host:", InstanceKey{}, `port ""`},
		{"host:0", InstanceKey{}, `port "0"`},
		{"host:65536", InstanceKey{}, `port "65536"`},
		{"host:abc", InstanceKey{}, `port "abc"`},
		{":3306", InstanceKey{}, "bad host"},
		{"user@host:3306", InstanceKey{}, "bad host"},
		{"a:b:c", InstanceKey{}, "want HOST:PORT"},
		{"[::1:3306", InstanceKey{}, "want HOST:PORT"},
	}
	for _, tt := range tests {
		got, err := ParseInstanceKey(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseInstanceKey(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
			}
			if ErrorCode(err) != EINVALID {
				t.Errorf("ParseInstanceKey(%q) code = %q, want %q", tt.in, ErrorCode(err), EINVALID)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseInstanceKey(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestInstanceKeyStringRoundTrip(t *testing.T) {
	for _, k := range []InstanceKey{{"127.0.0.1", 3306}, {"::1", 3307}, {"db", 1}} {
		got, err := ParseInstanceKey(k.String())
		if err != nil || got != k {
			t.Errorf("round trip of %v: %v, %v", k, got, err)
		}
	}
}

func TestNormalized(t *testing.T) {
	a := InstanceKey{"localhost", 3306}.Normalized()
	b := InstanceKey{"127.0.0.1", 3306}.Normalized()
	c := InstanceKey{"::1", 3306}.Normalized()
	if a != b || b != c {
		t.Errorf("normalized keys differ: %v %v %v", a, b, c)
	}
	if (InstanceKey{"DB1.Example.", 1}).Normalized().Host != "db1.example" {
		t.Errorf("host not lower-cased and trimmed")
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want [3]int
		err  bool
	}{
		{"10.11.6-MariaDB-0+deb12u1-log", [3]int{10, 11, 6}, false},
		{"8.0.36", [3]int{8, 0, 36}, false},
		{"8.0.36-28", [3]int{8, 0, 36}, false},
		{"5.7", [3]int{5, 7, 0}, false},
		{"", [3]int{}, true},
		{"abc", [3]int{}, true},
		{"10", [3]int{}, true},
	}
	for _, tt := range tests {
		v, err := ParseVersion(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %v, want error", tt.in, v)
			}
			continue
		}
		if err != nil || [3]int{v.Major, v.Minor, v.Patch} != tt.want || v.Raw != tt.in {
			t.Errorf("ParseVersion(%q) = %+v, %v", tt.in, v, err)
		}
	}
	v := Version{Major: 8, Minor: 0, Patch: 22}
	if !v.AtLeast(8, 0, 22) || v.AtLeast(8, 0, 23) || !v.AtLeast(5, 7, 44) {
		t.Errorf("AtLeast wrong for %v", v)
	}
	if v.Compare(Version{Major: 10}) != -1 || v.Compare(v) != 0 {
		t.Errorf("Compare wrong")
	}
}

func TestErrorCode(t *testing.T) {
	if ErrorCode(nil) != "" {
		t.Error("nil error has a code")
	}
	e := Errorf(ENOTFOUND, "no sandbox %q", "x")
	if ErrorCode(e) != ENOTFOUND || e.Error() != `no sandbox "x"` {
		t.Errorf("got %q %q", ErrorCode(e), e.Error())
	}
	w := WrapError(EAUTH, e, "connect")
	if ErrorCode(w) != EAUTH || w.Error() != `connect: no sandbox "x"` {
		t.Errorf("got %q %q", ErrorCode(w), w.Error())
	}
}

func TestSemiSyncRole(t *testing.T) {
	for want, s := range map[string]SemiSyncState{
		"both": {PrimaryEnabled: true, ReplicaEnabled: true}, "primary": {PrimaryEnabled: true},
		"replica": {ReplicaEnabled: true}, "": {},
	} {
		if got := s.Role(); got != want {
			t.Errorf("Role() = %q, want %q", got, want)
		}
	}
}

func TestLockWaitState(t *testing.T) {
	for state, want := range map[string]bool{
		"Waiting for table metadata lock":                          true,
		"Waiting for table level lock":                             true,
		"Waiting for global read lock":                             true,
		"Waiting for commit lock":                                  true,
		"Waiting for backup lock":                                  true,
		"Waiting for table flush":                                  true,
		"waiting for table metadata lock":                          true,
		"System lock":                                              false,
		"Waiting for prior transaction to commit":                  false,
		"Waiting for work from SQL thread":                         false,
		"Slave has read all relay log; waiting for more updates":   false,
		"Waiting until MASTER_DELAY seconds after master executed": false,
		"": false,
	} {
		if got := LockWaitState(state); got != want {
			t.Errorf("LockWaitState(%q) = %v, want %v", state, got, want)
		}
	}
}
