package mysql

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// ReplicaStatus reads each row through its columns' positions (no map per
// row); it must read every recorded replica status exactly as the map path
// (ParseReplicaStatusRows) does.
func TestReplicaStatusIndexedEqualsMaps(t *testing.T) {
	paths, err := filepath.Glob("testdata/*/*/replica_status.txt")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/*/replica_status.txt")
	paths = append(paths, more...)
	if len(paths) < 5 {
		t.Fatalf("found %d recorded replica statuses, want at least 5", len(paths))
	}
	for _, p := range paths {
		rel := strings.TrimPrefix(p, "testdata/")
		rows := toRows(parseVertical(readTestdata(t, rel)))
		flavor := dbpilot.FlavorMySQL
		if strings.Contains(rel, "mariadb") {
			flavor = dbpilot.FlavorMariaDB
		}
		want, werr := ParseReplicaStatusRows(flavor, rows.Maps())
		got, gerr := ReplicaStatus(flavor, rows)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: errors differ: maps %v, indexed %v", rel, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: indexed read\n%+v\nmap read\n%+v", rel, got, want)
		}
	}
}

// Two columns folding into one name (Master_Host and Source_Host): the
// first in sorted order wins on both paths.
func TestReplicaStatusFoldedColumns(t *testing.T) {
	a, b := "10.0.0.1", "10.0.0.2"
	io, port := "Yes", "3306"
	rows := &Rows{
		Columns: []string{"Source_Host", "Master_Host", "Slave_IO_Running", "Master_Port"},
		Values:  [][]*string{{&b, &a, &io, &port}},
	}
	want, err := ParseReplicaStatusRows(dbpilot.FlavorMariaDB, rows.Maps())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReplicaStatus(dbpilot.FlavorMariaDB, rows)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Source.Host != a || want[0].Source.Host != a {
		t.Fatalf("source host: indexed %q, maps %q; want %q (Master_Host sorts first)", got[0].Source.Host, want[0].Source.Host, a)
	}
}
