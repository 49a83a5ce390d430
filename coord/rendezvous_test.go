package coord

import (
	"fmt"
	"slices"
	"testing"
)

// Rendezvous hashing: every serve ranks the members alike whatever the
// order it knows them in; a member that joins takes only clusters from
// the others (none moves between the others), about its share.
func TestRendezvous(t *testing.T) {
	ids := []string{"a", "b", "c"}
	clusters := make([]string, 300)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("c%03d", i)
	}
	first := map[string]string{}
	per := map[string]int{}
	for _, c := range clusters {
		r := rendezvous(c, ids)
		if got := rendezvous(c, []string{"c", "a", "b"}); !slices.Equal(got, r) {
			t.Fatalf("%s: ranks %v and %v for the same members", c, r, got)
		}
		first[c] = r[0]
		per[r[0]]++
	}
	for _, id := range ids {
		if per[id] < 60 || per[id] > 140 {
			t.Errorf("member %s ranked first for %d of 300 clusters, want about 100: %v", id, per[id], per)
		}
	}
	moved := 0
	for _, c := range clusters {
		now := rendezvous(c, append(slices.Clone(ids), "d"))[0]
		switch {
		case now == "d":
			moved++
		case now != first[c]:
			t.Errorf("%s moved from %s to %s when d joined", c, first[c], now)
		}
	}
	if moved < 40 || moved > 110 {
		t.Errorf("%d of 300 clusters moved to the member that joined, want about 75", moved)
	}
}
