package mysql

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{`a`: `'a'`, `it's`: `'it\'s'`, `b\s`: `'b\\s'`, "nl\n": `'nl\n'`} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFirstWordsHidesPassword(t *testing.T) {
	got := firstWords("ALTER USER x IDENTIFIED BY 'secret'")
	if got != "ALTER USER x IDENTIFIED" {
		t.Errorf("firstWords = %q", got)
	}
	got = firstWords("SET PASSWORD FOR x = PASSWORD('secret')")
	if want := "SET ..."; got != want {
		t.Errorf("firstWords = %q, want %q", got, want)
	}
}
