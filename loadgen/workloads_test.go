package loadgen

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestSysbenchValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cRE := regexp.MustCompile(`^[0-9]{11}(-[0-9]{11}){9}$`)
	padRE := regexp.MustCompile(`^[0-9]{11}(-[0-9]{11}){4}$`)
	seen := map[string]bool{}
	for range 1000 {
		c, pad := sbCValue(rng), sbPadValue(rng)
		if len(c) != 119 || !cRE.MatchString(c) {
			t.Fatalf("c value %q: want 10 groups of 11 digits, 119 characters", c)
		}
		if len(pad) != 59 || !padRE.MatchString(pad) {
			t.Fatalf("pad value %q: want 5 groups of 11 digits, 59 characters", pad)
		}
		seen[c] = true
	}
	if len(seen) != 1000 {
		t.Errorf("only %d distinct c values of 1000", len(seen))
	}
}

// shape replaces the table number of a statement with N.
var tableNumRE = regexp.MustCompile(`sbtest[0-9]+`)

func TestOLTPStatements(t *testing.T) {
	point := "SELECT c FROM sbtestN WHERE id=?"
	ranges := []string{
		"SELECT c FROM sbtestN WHERE id BETWEEN ? AND ?",
		"SELECT SUM(k) FROM sbtestN WHERE id BETWEEN ? AND ?",
		"SELECT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c",
		"SELECT DISTINCT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c",
	}
	writes := []string{
		"UPDATE sbtestN SET k=k+1 WHERE id=?",
		"UPDATE sbtestN SET c=? WHERE id=?",
		"DELETE FROM sbtestN WHERE id=?",
		"INSERT INTO sbtestN (id, k, c, pad) VALUES (?, ?, ?, ?)",
	}
	reads := append(append([]string{}, repeat(point, 10)...), ranges...)
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	begin, commit, ledger := []string{"BEGIN"}, []string{"COMMIT"}, []string{InsertSQL(7)}
	insert := "INSERT INTO sbtestN (k, c, pad) VALUES (?, ?, ?)"
	cases := []struct {
		name       string
		write      bool
		plain, led []string
	}{
		{"oltp_point_select", false, []string{point}, nil},
		{"oltp_read_only", false, cat(begin, reads, commit), nil},
		{"oltp_read_write", true, cat(begin, reads, writes, commit), cat(begin, reads, writes, ledger, commit)},
		{"oltp_write_only", true, cat(begin, writes, commit), cat(begin, writes, ledger, commit)},
		{"oltp_insert", true, []string{insert}, []string{"BEGIN", insert, InsertSQL(7), "COMMIT"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWorkload(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if ops := w.Ops(); len(ops) != 1 || ops[0] != tc.name {
				t.Errorf("Ops() = %v, want [%s]", ops, tc.name)
			}
			w.(Configurer).Configure(PrepareOptions{Tables: 3, TableSize: 500})
			c := w.NewClient(42).(*oltpClient)
			if op, write := c.Next(); op != 0 || write != tc.write {
				t.Errorf("Next() = %d, %v; want 0, %v", op, write, tc.write)
			}
			for _, lid := range []uint64{0, 7} {
				want := tc.plain
				if lid != 0 {
					if !tc.write {
						continue // Run never records a ledger id for reads
					}
					want = tc.led
				}
				for range 50 {
					stmts := c.statements(lid)
					got := make([]string, len(stmts))
					for i, s := range stmts {
						got[i] = tableNumRE.ReplaceAllString(s.sql, "sbtestN")
						checkOLTPArgs(t, s, 3, 500)
					}
					if strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Fatalf("ledger %d: statements\n%s\nwant\n%s", lid, strings.Join(got, "\n"), strings.Join(want, "\n"))
					}
					// delete+insert use the same id on the same table.
					for i, s := range stmts {
						if strings.HasPrefix(s.sql, "DELETE") {
							ins := stmts[i+1]
							if s.args[0] != ins.args[0] || tableNumRE.FindString(s.sql) != tableNumRE.FindString(ins.sql) {
								t.Errorf("delete %v then insert %v: want the same row", s, ins)
							}
						}
					}
				}
			}
		})
	}
}

// checkOLTPArgs checks a statement's table and ids are within the size.
func checkOLTPArgs(t *testing.T, s stmt, tables, size int) {
	t.Helper()
	if m := tableNumRE.FindString(s.sql); m != "" {
		n := 0
		for _, d := range strings.TrimPrefix(m, "sbtest") {
			n = n*10 + int(d-'0')
		}
		if n < 1 || n > tables {
			t.Errorf("%v: table out of 1..%d", s, tables)
		}
	}
	var ints []int
	for _, a := range s.args {
		if v, ok := a.(int); ok {
			ints = append(ints, v)
		}
	}
	switch {
	case strings.Contains(s.sql, "BETWEEN"):
		if len(ints) != 2 || ints[0] < 1 || ints[0] > size || ints[1] != ints[0]+sbRangeSize-1 {
			t.Errorf("%v: want a range of %d from an id in 1..%d", s, sbRangeSize, size)
		}
	default:
		for _, v := range ints {
			if v < 1 || v > size {
				t.Errorf("%v: id or k out of 1..%d", s, size)
			}
		}
	}
	if strings.Contains(s.sql, "SET c=?") && len(s.args[0].(string)) != 119 {
		t.Errorf("%v: c value not in sysbench's format", s)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestLinkBenchMix(t *testing.T) {
	w, err := NewWorkload("linkbench")
	if err != nil {
		t.Fatal(err)
	}
	ops := w.Ops()
	want := []string{"get_node", "add_node", "update_node", "delete_node", "add_link", "delete_link", "update_link", "get_link", "get_link_list", "count_link"}
	if strings.Join(ops, ",") != strings.Join(want, ",") {
		t.Fatalf("Ops() = %v, want %v", ops, want)
	}
	var sum float64
	for _, p := range LinkBenchMix {
		sum += p
	}
	if math.Abs(sum-100) > 1e-5 {
		t.Fatalf("mix sums to %v, want 100", sum)
	}
	const n = 200000
	counts := make([]int, len(ops))
	c := w.NewClient(7)
	for range n {
		op, write := c.Next()
		counts[op]++
		wantWrite := strings.HasPrefix(ops[op], "add_") || strings.HasPrefix(ops[op], "update_") || strings.HasPrefix(ops[op], "delete_")
		if write != wantWrite {
			t.Fatalf("%s: write = %v", ops[op], write)
		}
	}
	for i, name := range ops {
		got := 100 * float64(counts[i]) / n
		if math.Abs(got-LinkBenchMix[i]) > 1 {
			t.Errorf("%s: %.2f%% of operations, want %.2f%% ±1", name, got, LinkBenchMix[i])
		}
	}
}

func TestHarmonic(t *testing.T) {
	for _, s := range []float64{0.606, 0.8} {
		var exact float64
		const n = 300000
		for i := 1; i <= n; i++ {
			exact += math.Pow(float64(i), -s)
		}
		if got := harmonic(n, s); math.Abs(got-exact)/exact > 1e-9 {
			t.Errorf("harmonic(%d, %v) = %v, want %v", n, s, got, exact)
		}
	}
}

func TestZipfShape(t *testing.T) {
	const n = 100000
	z := newZipf(n, lbReadShape)
	rng := rand.New(rand.NewPCG(3, 4))
	ranks := map[int64]int{}
	const draws = 2000000
	for range draws {
		r := z.rank(rng.Float64())
		if r < 0 || r >= n {
			t.Fatalf("rank %d out of [0, %d)", r, n)
		}
		ranks[r]++
	}
	// Rank 1's frequency is 1/zetan; rank 1000's 1000^0.8 ≈ 251 times less.
	p1 := float64(ranks[0]) / draws
	if want := 1 / z.zetan; math.Abs(p1-want)/want > 0.05 {
		t.Errorf("rank 1: frequency %.4f, want %.4f", p1, want)
	}
	if ranks[0] < 50*max(ranks[999], 1) {
		t.Errorf("rank 1 drawn %d times, rank 1000 %d: want a far steeper decline", ranks[0], ranks[999])
	}
	if ranks[999] == 0 {
		t.Error("rank 1000 never drawn")
	}

	// Through the permutation: ids in [1, n], the hottest id the one of
	// rank 1, and the permutation one to one.
	d := newLBDists(n)
	ids := map[int64]int{}
	for range draws / 4 {
		id := d.read.id(rng)
		if id < 1 || id > n {
			t.Fatalf("id %d out of [1, %d]", id, n)
		}
		ids[id]++
	}
	hot := d.read.perm.id(0)
	for id, k := range ids {
		if k > ids[hot] {
			t.Fatalf("id %d drawn %d times, more than the rank-1 id %d (%d)", id, k, hot, ids[hot])
		}
	}
	if ids[hot] < 20*max(ids[d.read.perm.id(999)], 1) {
		t.Errorf("rank-1 id drawn %d times, rank-1000 id %d", ids[hot], ids[d.read.perm.id(999)])
	}
	for _, m := range []int64{1, 2, 7, 1000, 4096, 5000} {
		p := newPermutation(m, 9)
		seen := map[int64]bool{}
		for r := range m {
			id := p.id(r)
			if id < 1 || id > m || seen[id] {
				t.Fatalf("permutation of %d: rank %d gives id %d (repeat or out of range)", m, r, id)
			}
			seen[id] = true
		}
	}
}

func TestLinkBenchDegree(t *testing.T) {
	const n = 100000
	var sum, zero int64
	for id := int64(1); id <= n; id++ {
		d := lbDegree(id)
		if d < 0 || d > lbDegreeMax {
			t.Fatalf("degree of %d = %d", id, d)
		}
		if a, b := lbLinkCount(id, 0), lbLinkCount(id, 1); a+b != d || a-b < 0 || a-b > 1 {
			t.Fatalf("degree %d split %d+%d", d, a, b)
		}
		sum += d
		if d == 0 {
			zero++
		}
	}
	if mean := float64(sum) / n; mean < 3.5 || mean > 4.5 {
		t.Errorf("mean out-degree %.2f, want about 4", mean)
	}
	if f := float64(zero) / n; f < 0.25 || f > 0.4 {
		t.Errorf("%.2f of nodes without links, want about a third", f)
	}
	c := newLinkBench().NewClient(1).(*lbClient)
	var total int
	for range 100000 {
		k := c.multiget()
		if k < 1 || k >= lbMultigetMax {
			t.Fatalf("multiget of %d ids", k)
		}
		total += k
	}
	if mean := float64(total) / 100000; mean < 3.4 || mean > 3.8 {
		t.Errorf("mean multiget %.2f, want LinkBench's ≈3.6", mean)
	}
}

func TestNewWorkload(t *testing.T) {
	names := Workloads()
	want := "oltp_point_select, oltp_read_only, oltp_read_write, oltp_write_only, oltp_insert, linkbench"
	if got := strings.Join(names, ", "); got != want {
		t.Errorf("Workloads() = %s, want %s", got, want)
	}
	for _, name := range names {
		w, err := NewWorkload(name)
		if err != nil || w.Name() != name {
			t.Errorf("NewWorkload(%q) = %v, %v", name, w, err)
		}
		if _, ok := w.(Configurer); !ok {
			t.Errorf("%s is not a Configurer", name)
		}
	}
	_, err := NewWorkload("x")
	if err == nil || err.Error() != `bench: unknown workload "x"; known: `+want {
		t.Errorf("NewWorkload(x): %v", err)
	}
}

func TestLinkBenchConfigure(t *testing.T) {
	w := newLinkBench()
	if w.distributions().nodes != lbDefaultNodes {
		t.Fatalf("default nodes %d", w.distributions().nodes)
	}
	w.Configure(PrepareOptions{Nodes: 50})
	c := w.NewClient(5).(*lbClient)
	for _, a := range []*lbAccess{c.d.read, c.d.write, c.d.nread, c.d.nupd} {
		for range 10000 {
			if id := a.id(c.rng); id < 1 || id > 50 {
				t.Fatalf("id %d out of [1, 50]", id)
			}
		}
	}
	for range 10000 {
		id1 := c.d.write.id(c.rng)
		ty := c.rng.IntN(lbLinkTypeCount)
		n := lbLinkCount(id1, ty)
		if id2 := c.id2(id1, ty, 1); id2 < id1 || id2 >= id1+max(n, 1) {
			t.Fatalf("delete id2 %d for id1 %d with %d links: want an existing one", id2, id1, n)
		}
		if id2 := c.id2(id1, ty, 0.5); id2 < id1 || id2 >= id1+max(2*n, 1) {
			t.Fatalf("add id2 %d for id1 %d with %d links", id2, id1, n)
		}
	}
}
