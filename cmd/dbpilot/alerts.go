package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) alertsCommand() *cobra.Command {
	var sf serviceFlags
	var asJSON bool
	var state string
	var limit int
	cmd := &cobra.Command{
		Use:   "alerts [CLUSTER]",
		Short: "List alerts: pending and firing ones, or the resolved history",
		Long: `List the alerts serve's rules raised, newest first: with --state active (the
default) those pending (the condition holds, not yet for the rule's 'for') and
firing; with pending, firing or resolved those only; with all, every state.
A suppressed alert (a replica's while its primary is down or a recovery runs)
shows why it is held back; it is not notified.

Exit status 1 when an alert listed is firing.` + exitHelp,
		Example: "  dbpilot alerts --sandbox demo\n  dbpilot alerts main --server http://127.0.0.1:7070 --state firing --json\n  dbpilot alerts --sandbox demo --state resolved --limit 100",
		Args:    rangeArgs(0, 1, "[CLUSTER]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var states []string
			switch state {
			case "active":
				states = []string{dbpilot.AlertFiring, dbpilot.AlertPending}
			case "all":
				states = []string{""}
			case dbpilot.AlertPending, dbpilot.AlertFiring, dbpilot.AlertResolved:
				states = []string{state}
			default:
				return dbpilot.Errorf(dbpilot.EINVALID, "invalid --state %q: want active, pending, firing, resolved or all", state)
			}
			if limit < 0 {
				return dbpilot.Errorf(dbpilot.EINVALID, "invalid --limit %d: want 0 or more", limit)
			}
			svc, done, err := sf.open(cmd.Context(), a, true)
			if err != nil {
				return err
			}
			defer done()
			as, ok := svc.(dbpilot.AlertService)
			if !ok {
				return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this dbpilot cannot list alerts")
			}
			f := dbpilot.AlertFilter{Limit: limit}
			if len(args) == 1 {
				f.Cluster = args[0]
			}
			alerts, err := listAlerts(cmd.Context(), as, f, states)
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(a.stdout, alerts)
			} else {
				err = printAlerts(a.stdout, alerts)
			}
			if err != nil {
				return err
			}
			for _, al := range alerts {
				if al.State == dbpilot.AlertFiring {
					return errProblemsFound
				}
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&state, "state", "active", "active (pending and firing), pending, firing, resolved or all")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many alerts (of each state with --state active)")
	return cmd
}

// listAlerts asks for the alerts of each state ("" for all) and returns them
// newest first.
func listAlerts(ctx context.Context, svc dbpilot.AlertService, f dbpilot.AlertFilter, states []string) ([]*dbpilot.Alert, error) {
	out := []*dbpilot.Alert{}
	for _, s := range states {
		f.State = s
		as, err := svc.Alerts(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, as...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ActiveAt.After(out[j].ActiveAt) })
	return out, nil
}

func printAlerts(w io.Writer, alerts []*dbpilot.Alert) error {
	if len(alerts) == 0 {
		_, err := fmt.Fprintln(w, "no alerts")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tSEVERITY\tALERT\tCLUSTER\tINSTANCE\tSINCE\tSUMMARY")
	for _, a := range alerts {
		since := a.ActiveAt
		switch a.State {
		case dbpilot.AlertFiring:
			since = a.FiredAt
		case dbpilot.AlertResolved:
			since = a.ResolvedAt
		}
		summary := oneLineText(a.Summary)
		if extra := extraLabels(a.Labels); extra != "" {
			summary += " " + extra
		}
		if a.Suppressed != "" {
			word := "suppressed"
			if a.State == dbpilot.AlertResolved {
				word = "resolved"
			}
			summary += fmt.Sprintf(" [%s: %s]", word, a.Suppressed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.State, a.Severity, a.Rule,
			dash(a.Labels["cluster"]), dash(a.Labels["instance"]), timeOrDash(since), summary)
	}
	return tw.Flush()
}

// extraLabels shows labels other than instance, cluster and role, which
// tell alerts of one rule on one instance apart (channel_name, say).
func extraLabels(labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		switch k {
		case "instance", "cluster", "role":
			continue
		}
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// oneLineText folds a multi-line summary onto one line.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
