package topology

// disjointSets is a union-find forest over 0..n-1 (path halving); a set's
// representative is its lowest member, so components come out in a stable
// order.
type disjointSets []int

func newDisjointSets(n int) disjointSets {
	s := make(disjointSets, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// find returns the representative of x's set.
func (s disjointSets) find(x int) int {
	for s[x] != x {
		s[x] = s[s[x]]
		x = s[x]
	}
	return x
}

// union merges the sets of a and b.
func (s disjointSets) union(a, b int) {
	if a, b = s.find(a), s.find(b); a != b {
		s[max(a, b)] = min(a, b)
	}
}
