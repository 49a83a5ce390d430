// Package simulator impersonates a fleet of MariaDB 10.11 servers on
// loopback ports, for scale tests and benchmarks of dbpilot serve: N
// instances in clusters of one primary and its replicas, each answering, over
// the MySQL wire protocol, the statements dbpilot sends (inspection,
// collectors, liveness, heartbeat) with plausible output shaped after real
// recordings (data/): SHOW ALL SLAVES STATUS pointing at the primary with
// GTID positions advancing, SHOW SLAVE HOSTS, global status counters moving
// with time, the variables inspection reads.
//
// An instance can be killed (its listener and every connection closed at
// once, so that a session blocked in SLEEP sees a reset) and revived; while
// a primary is dead its replicas report their IO thread Connecting with
// error 2003, as real replicas do.
//
// It is a way to measure scale, not a substitute for real servers: no data,
// no SQL engine; statements it does not know get an error and are counted.
// Correctness tests use real sandboxes (internal/testutil).
package simulator
