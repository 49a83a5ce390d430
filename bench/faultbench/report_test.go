package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ms builds times in nanoseconds from milliseconds.
func ms(v int64) int64 { return v * 1e6 }

func TestSplits(t *testing.T) {
	cases := []struct {
		name    string
		samples []sample
		want    split
	}{
		{"none", nil, split{}},
		{"one writable each sample", []sample{
			{ms(0), "node1", 'W'}, {ms(0), "node2", 'R'}, {ms(0), "node3", 'R'},
			{ms(100), "node1", 'X'}, {ms(100), "node2", 'W'}, {ms(100), "node3", 'R'},
		}, split{max: 1}},
		// node1 writable in one sample and node2 in the next is no split:
		// only one sample's nodes count together.
		{"handover across samples", []sample{
			{ms(0), "node1", 'W'}, {ms(0), "node2", 'R'},
			{ms(100), "node1", 'R'}, {ms(100), "node2", 'W'},
		}, split{max: 1}},
		{"two writable in two samples", []sample{
			{ms(0), "node1", 'W'}, {ms(0), "node2", 'R'},
			{ms(100), "node1", 'W'}, {ms(100), "node2", 'W'},
			{ms(200), "node1", 'W'}, {ms(200), "node2", 'W'},
			{ms(300), "node1", 'R'}, {ms(300), "node2", 'W'},
		}, split{max: 2, ticks: 2, firstAt: ms(100), firstNodes: []string{"node1", "node2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := splits(c.samples); !reflect.DeepEqual(got, c.want) {
				t.Errorf("splits = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestInterleaved(t *testing.T) {
	cases := []struct {
		name string
		acks []ack
		want []string
	}{
		{"clean failover", []ack{
			{1, "node1", ms(0), ms(5)}, {2, "node1", ms(10), ms(15)},
			{5, "node2", ms(900), ms(905)}, {6, "node2", ms(910), ms(915)},
		}, nil},
		// The old primary's last acknowledgement arrives after the new
		// primary's first one, for a write begun before it: no split.
		{"slow last ack of the old primary", []ack{
			{1, "node1", ms(0), ms(300)},
			{2, "node2", ms(100), ms(105)}, {3, "node2", ms(400), ms(405)},
		}, nil},
		{"old primary takes writes again", []ack{
			{1, "node1", ms(0), ms(5)},
			{2, "node2", ms(900), ms(905)},
			{3, "node1", ms(1000), ms(1005)}, {4, "node1", ms(1010), ms(1015)},
			{5, "node2", ms(1100), ms(1105)},
		}, []string{ // each took writes between the other's
			"writer: 1 write(s) acked on node2 between writes on node1",
			"writer: 2 write(s) acked on node1 between writes on node2",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := interleaved(c.acks); !reflect.DeepEqual(got, c.want) {
				t.Errorf("interleaved = %q, want %q", got, c.want)
			}
		})
	}
}

func TestWritesOpenAndPause(t *testing.T) {
	acks := []ack{
		{1, "node1", ms(0), ms(5)},
		{2, "node1", ms(995), ms(1002)},  // begun before the fault
		{3, "node1", ms(1001), ms(1003)}, // on the node the fault hit
		{4, "node3", ms(1500), ms(1800)},
		{5, "node2", ms(1600), ms(1700)},
		{6, "node2", ms(1710), ms(1720)},
	}
	fault := ms(1000)
	at, ok := writesOpen(acks, fault, "node1")
	if !ok || at != ms(1700) {
		t.Errorf("writesOpen = %d, %v; want %d, true", at, ok, ms(1700))
	}
	if at, ok := writesOpen(acks, fault, ""); !ok || at != ms(1003) {
		t.Errorf("writesOpen without a faulted node = %d, %v; want %d, true", at, ok, ms(1003))
	}
	if _, ok := writesOpen(acks, ms(5000), ""); ok {
		t.Error("writesOpen found a write after the last one")
	}
	// Acknowledgements after the fault: 1002, 1003, 1700, 1720, 1800.
	if got := longestPause(acks, fault); got != ms(697) {
		t.Errorf("longestPause = %d ms, want 697", got/1e6)
	}
}

func TestReadLogsAndTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(acksFile, "7\tnode2\t100\t200\nbroken line\n8\tnode1\t300\t400\n")
	write(monitorFile, "100\tnode1\tW\n100\tnode2\tRR\n")
	acks, err := readAcks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ack{{7, "node2", 100, 200}, {8, "node1", 300, 400}}; !reflect.DeepEqual(acks, want) {
		t.Errorf("readAcks = %+v, want %+v", acks, want)
	}
	ss, err := readSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []sample{{100, "node1", 'W'}}; !reflect.DeepEqual(ss, want) {
		t.Errorf("readSamples = %+v, want %+v", ss, want)
	}

	got := wrap("one two three four five", 9)
	if want := []string{"one two", "  three", "  four", "  five"}; !reflect.DeepEqual(got, want) {
		t.Errorf("wrap = %q, want %q", got, want)
	}
	tbl := filepath.Join(dir, "table.tsv")
	if err := emit(tbl, []string{"1 kill", "failover", "a\tb", "1", "0 of 9", "0.20 s", "held"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tbl)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 kill\tfailover\ta b\t1\t0 of 9\t0.20 s\theld\n"; string(b) != want {
		t.Errorf("table line %q, want %q (a tab in a cell becomes a space)", b, want)
	}
	if err := row([]string{"--table", tbl, "--scenario", "x", "--verdict", "fine"}); err == nil || !strings.Contains(err.Error(), "--verdict") {
		t.Errorf("row accepted verdict fine: %v", err)
	}
}
