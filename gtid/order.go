package gtid

import "strconv"

// Order is the result of comparing side A with side B for one MariaDB
// domain (CompareMariaPositions) or one MySQL source uuid and tag
// (CompareMySQLSets).
type Order int

const (
	// OrderEqual: both sides are at the same position.
	OrderEqual Order = iota
	// OrderBehind: A is behind B; B has transactions A lacks.
	OrderBehind
	// OrderAhead: A is ahead of B; A has transactions B lacks.
	OrderAhead
	// OrderDiverged: the sides hold different transactions: for MariaDB
	// the same sequence number written by different servers, for MySQL
	// each side has transactions the other lacks.
	OrderDiverged
	// OrderOnlyA: the domain or source appears in A only.
	OrderOnlyA
	// OrderOnlyB: the domain or source appears in B only.
	OrderOnlyB
)

var orderNames = [...]string{
	OrderEqual:    "equal",
	OrderBehind:   "behind",
	OrderAhead:    "ahead",
	OrderDiverged: "diverged",
	OrderOnlyA:    "only-a",
	OrderOnlyB:    "only-b",
}

// String returns "equal", "behind", "ahead", "diverged", "only-a" or
// "only-b".
func (o Order) String() string {
	if o >= 0 && int(o) < len(orderNames) {
		return orderNames[o]
	}
	return "Order(" + strconv.Itoa(int(o)) + ")"
}

// MarshalText encodes the order as its String, for JSON output.
func (o Order) MarshalText() ([]byte, error) {
	return []byte(o.String()), nil
}
