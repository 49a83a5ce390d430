package tui

import "github.com/dbpilot/dbpilot"

// rowFromInstance fills what an inspection says of an instance (mysql's
// Inspect in Direct, serve's cluster view in Server): read_only, the GTID
// position, the replication channels and the lag they report. An
// unreachable instance is a row with its error.
func rowFromInstance(inst *dbpilot.Instance) Row {
	r := Row{Instance: inst.Key.String()}
	if !inst.Reachable {
		r.Err = "unreachable"
		if inst.LastError != "" {
			r.Err = inst.LastError
		}
		return r
	}
	r.ReadOnly = inst.ReadOnly
	if inst.Flavor == dbpilot.FlavorMariaDB {
		r.GTID = inst.GTID.CurrentPos
	} else {
		r.GTID = inst.GTID.Executed
	}
	for _, ch := range inst.Channels {
		if ch.Source.Host == "" {
			continue // configured and reset: no source
		}
		c := Channel{Name: ch.Name, Source: ch.Source.String(), IORunning: string(ch.IORunning), SQLRunning: yesNo(ch.SQLRunning),
			RelayLogSpace: N(float64(ch.RelayLogSpace))}
		if ch.SecondsBehind != nil {
			c.Lag = N(float64(*ch.SecondsBehind))
		}
		r.Channels = append(r.Channels, c)
		if !c.Lag.Valid {
			r.LagNull = true
		} else if !r.Lag.Valid || c.Lag.V > r.Lag.V {
			r.Lag = c.Lag
		}
	}
	if r.LagNull {
		r.Lag = Num{}
	}
	return r
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}
