// Package gtid is the vocabulary of global transaction IDs for MariaDB and
// MySQL: parsing, canonical printing, set algebra and the comparisons that
// failover decisions stand on. It does no I/O.
//
// MariaDB GTIDs are domain-server-seq triples (MariaGTID). A MariaList holds
// the value of @@gtid_binlog_pos, @@gtid_slave_pos, @@gtid_current_pos (one
// GTID per domain) or @@gtid_binlog_state (one GTID per domain and server).
// For set algebra a MariaList entry (d, s, n) is read as the sequence numbers
// 1..n that server s wrote in domain d; MariaSet holds arbitrary sets of such
// sequence numbers, so that differences can be expressed.
//
// MySQL GTID sets (MySQLSet) are uuid[:tag]:interval lists as in
// @@gtid_executed, including the tagged form of MySQL 8.3 and later.
//
// Every value is immutable: no function or method modifies its receiver or
// its arguments, and results never share memory that a caller can modify
// with their inputs.
package gtid
