package mysql

import "github.com/dbpilot/dbpilot"

// ParseReplicaStatusRows reads the rows of MariaDB's SHOW ALL SLAVES STATUS
// or MySQL's SHOW REPLICA STATUS / SHOW SLAVE STATUS (as Rows.Maps returns
// them: NULL columns absent) into channels, in row order, with the same
// rules as Inspect: either column vocabulary, case-insensitive names,
// passwords in error texts redacted. A malformed row fails the call.
func ParseReplicaStatusRows(flavor dbpilot.Flavor, rows []map[string]string) ([]dbpilot.ReplicationChannel, error) {
	out := make([]dbpilot.ReplicationChannel, 0, len(rows))
	for _, row := range rows {
		c, err := parseReplicaStatusRow(flavor, row)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ReplicaStatus reads a replica status result (see ParseReplicaStatusRows)
// with its column names folded once for all rows.
func ReplicaStatus(flavor dbpilot.Flavor, r *Rows) ([]dbpilot.ReplicationChannel, error) {
	index := r.canonicalIndex()
	out := make([]dbpilot.ReplicationChannel, 0, len(r.Values))
	for _, vals := range r.Values {
		c, err := parseCanonicalReplicaStatus(flavor, indexedRow{index: index, vals: vals})
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
