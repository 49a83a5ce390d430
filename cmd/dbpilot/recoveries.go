package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) recoveriesCommand() *cobra.Command {
	var sf serviceFlags
	var asJSON, audit bool
	var limit int
	cmd := &cobra.Command{
		Use:   "recoveries [CLUSTER]",
		Short: "List recoveries (failovers, switchovers, relocations), newest first",
		Long: `List recoveries with their outcome. With --audit, print the audit log of each:
every step and decision with its timestamp.` + exitHelp,
		Example: "  dbpilot recoveries --sandbox demo\n  dbpilot recoveries main --server http://127.0.0.1:7070 --json",
		Args:    rangeArgs(0, 1, "[CLUSTER]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, done, err := sf.open(cmd.Context(), a, true)
			if err != nil {
				return err
			}
			defer done()
			f := dbpilot.RecoveryFilter{Limit: limit}
			if len(args) == 1 {
				f.Cluster = args[0]
			}
			recs, err := svc.Recoveries(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, recs)
			}
			if len(recs) == 0 {
				fmt.Fprintln(a.stdout, "no recoveries")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCLUSTER\tKIND\tSTARTED\tTOOK\tFAILURE→WRITES\tFROM\tTO\tRESULT\tACKED")
			for _, r := range recs {
				took := "-"
				if !r.Ended.IsZero() {
					took = r.Ended.Sub(r.Started).Round(time.Millisecond).String()
				}
				result := "ok"
				if !r.Success {
					result = "failed: " + r.Error
					if r.Ended.IsZero() {
						result = "running"
					}
				}
				if len(r.LostReplicas) > 0 {
					result += fmt.Sprintf(" (%d replicas lost)", len(r.LostReplicas))
				}
				open := "-"
				if !r.WritesOpen.IsZero() && !r.DetectedAt.IsZero() {
					open = r.WritesOpen.Sub(r.DetectedAt).Round(time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Cluster, r.Kind, r.Started.Local().Format("2006-01-02 15:04:05"), took, open,
					r.OldPrimary, r.NewPrimary, result, yesNo(r.Acked))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if !audit {
				return nil
			}
			for _, r := range recs {
				evs, err := svc.AuditEvents(cmd.Context(), dbpilot.AuditFilter{RecoveryID: r.ID})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "\nrecovery %d:\n", r.ID)
				for _, e := range evs {
					fmt.Fprintf(a.stdout, "  %s %-16s %s\n", e.Time.Local().Format("15:04:05.000"), e.Event, e.Message)
				}
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&audit, "audit", false, "also print each recovery's audit log")
	cmd.Flags().IntVar(&limit, "limit", 20, "how many recoveries")
	return cmd
}
