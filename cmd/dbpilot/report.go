package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) reportCommand() *cobra.Command {
	var sf serviceFlags
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report RECOVERY_ID [--server URL] [--out FILE.html]",
		Short: "Write a recovery's incident report: one self-contained HTML page",
		Long: `Write the incident report of a recovery (a failover, switchover, relocation or
rejoin; 'dbpilot recoveries' lists their ids) as one HTML page that loads
nothing else and prints as it shows. serve makes it (GET
/api/recoveries/ID/report, the console's "Incident report" link) from what it
recorded; this command fetches it from the serve at --server (or the one that
runs for --sandbox/--config: the address it wrote beside its state file),
with --token, $DBPILOT_TOKEN or the sandbox's token when reads need one.

Sections, and where their data comes from:
  key times     first symptom, detection, start, writes open and end (the
                recovery record) and the time writes were unavailable
                (detection to writes open); the first symptom is the
                earliest of the detection (serve's first failed probe of
                the primary), the old primary's alerts that went pending
                before it, and the cluster's audit events about it
  timeline      every audit event of the recovery (detection with the
                replicas' votes, plan, SQL steps, hooks, ...) with its
                duration: recorded by the step, or the time to the next
                step; the cluster's other audit events and its alerts'
                changes from 5 minutes before the detection to 5 minutes
                after the end
  decision      the plan: the candidates considered, why the chosen one won,
                the steps planned
  topology      the cluster just before the detection and just after the end
                (serve's topology history)
  metrics       queries/s, heartbeat lag, threads running and connected,
                semi-sync waits, from 5 minutes before to 5 minutes after,
                with the detection and writes open marked (serve's metrics)
  alerts        the cluster's alerts active in that window
  transactions  replicas lost; transactions the old primary had (its last
                GTID position read) that the new primary had not received;
                errant transactions found on the old primary when it
                answered again; a check says "none found" only when it ran,
                "not checked" when nothing was recorded to check with
  clients       when 'dbpilot bench run --server' was pushing its intervals:
                the longest write stall, errors by class, p50/p99/max
                latency per second from 30 s before the detection to 30 s
                after writes open, and the acknowledged-write ledger check
                (runs with --during)

Exit status 2 with one line when serve cannot be reached or the recovery does
not exist.` + exitHelp,
		Example: "  dbpilot report 12 --server http://127.0.0.1:7070\n  dbpilot report 12 --sandbox demo --out /tmp/incident-12.html\n  dbpilot report 12 --server https://dbpilot.example.com:7070 --out - > incident.html",
		Args:    rangeArgs(1, 1, "RECOVERY_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return dbpilot.Errorf(dbpilot.EINVALID, "report: invalid recovery id %q: want the number 'dbpilot recoveries' shows", args[0])
			}
			if sf.server == "" {
				if sf.server, err = runningServeURL(&sf); err != nil {
					return err
				}
			}
			format := dbpilot.ReportHTML
			if asJSON {
				format = dbpilot.ReportJSON
			}
			page, err := sf.client().RecoveryReport(cmd.Context(), id, format)
			switch code := dbpilot.ErrorCode(err); code {
			case "":
			case dbpilot.ENOTFOUND:
				if strings.Contains(err.Error(), "no API endpoint") {
					return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "report: serve at %s writes no incident reports (a dbpilot older than this one): upgrade it", sf.server)
				}
				return dbpilot.Errorf(code, "report: serve at %s has no recovery %d ('dbpilot recoveries --server %s' lists them)", sf.server, id, sf.server)
			case dbpilot.EUNAVAIL:
				return dbpilot.WrapError(code, err, "report: is dbpilot serve running at %s? (give its address with --server URL)", sf.server)
			default:
				return dbpilot.WrapError(code, err, "report of recovery %d", id)
			}
			if out == "-" || (asJSON && out == "") {
				_, err := a.stdout.Write(page)
				return err
			}
			if out == "" {
				out = fmt.Sprintf("report-%d.html", id)
			}
			if err := os.WriteFile(out, page, 0o644); err != nil {
				return dbpilot.WrapError(dbpilot.EINVALID, err, "report: write %s", out)
			}
			fmt.Fprintf(a.stdout, "wrote %s (%d bytes): the incident report of recovery %d\n", out, len(page), id)
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVarP(&out, "out", "o", "", `file to write (default report-RECOVERY_ID.html in the current directory; "-" for stdout)`)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the data the report is made from (JSON) instead of the page (to stdout unless --out)")
	return cmd
}

// runningServeURL is the address of the serve that runs for --sandbox or
// --config: the URL it wrote beside its state file.
func runningServeURL(sf *serviceFlags) (string, error) {
	if sf.sandbox == "" && sf.config == "" {
		return "", dbpilot.Errorf(dbpilot.EINVALID, "report: serve makes the report: give --server URL (or --sandbox NAME / --config FILE of a running serve)")
	}
	cfg, err := sf.loadConfig()
	if err != nil {
		return "", err
	}
	if u := servedURL(cfg); u != "" {
		return u, nil
	}
	return "", dbpilot.Errorf(dbpilot.EUNAVAIL, "report: no serve has written its address beside %s: start 'dbpilot serve' for it, or give --server URL", cfg.State)
}
