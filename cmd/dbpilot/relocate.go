package main

import (
	"fmt"
	"regexp"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) relocateCommand() *cobra.Command {
	var sf serviceFlags
	var opt dbpilot.OperationOptions
	var below string
	cmd := &cobra.Command{
		Use:   "relocate REPLICA --below TARGET",
		Short: "Move a replica below another server (GTID-based)",
		Long: `Move a replica below another server of its cluster with GTID auto-positioning.
Refused, with the reason, when TARGET has no binary log or no
log_slave_updates, when REPLICA has transactions TARGET lacks, when the
move would create a cycle, or when TARGET, itself a replica, cannot apply
what it has left within --max-lag (switchover.max_lag, default 10s; see
'dbpilot switchover --help'): REPLICA would inherit that lag.` + exitHelp,
		Example: `  dbpilot relocate 127.0.0.1:28143 --below 127.0.0.1:28142 --sandbox demo`,
		Args:    exactArgs(1, "REPLICA"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := notNegative("--max-lag", opt.MaxLag); err != nil {
				return err
			}
			replica, target, err := parsePair(args[0], below)
			if err != nil {
				return err
			}
			opt.To = target
			svc, done, err := sf.open(cmd.Context(), a, false)
			if err != nil {
				return err
			}
			defer done()
			rec, err := svc.Relocate(cmd.Context(), replica, opt)
			if rec != nil {
				printRecovery(a.stdout, rec, opt.DryRun)
			}
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&below, "below", "", "the new source HOST:PORT (required)")
	cmd.Flags().BoolVar(&opt.DryRun, "dry-run", false, "check and print; change nothing")
	cmd.Flags().Var(durationFlag(&opt.MaxLag, 0), "max-lag", "refuse a target that cannot catch up within this (default: switchover.max_lag, 10s)")
	return cmd
}

func parsePair(replica, below string) (dbpilot.InstanceKey, dbpilot.InstanceKey, error) {
	r, err := dbpilot.ParseInstanceKey(replica)
	if err != nil {
		return r, r, err
	}
	if below == "" {
		return r, r, dbpilot.Errorf(dbpilot.EINVALID, "--below TARGET is required")
	}
	t, err := dbpilot.ParseInstanceKey(below)
	return r, t, err
}

func (a *app) relocateReplicasCommand() *cobra.Command {
	var sf serviceFlags
	var opt dbpilot.OperationOptions
	var below, pattern string
	cmd := &cobra.Command{
		Use:   "relocate-replicas SOURCE --below TARGET [--pattern REGEX]",
		Short: "Move the replicas of SOURCE (matching REGEX) below TARGET",
		Long: `Move every replica of SOURCE whose HOST:PORT matches --pattern below TARGET,
one by one, with the same checks as 'dbpilot relocate'. Exits 1 when some
could not be moved.` + exitHelp,
		Args: exactArgs(1, "SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := notNegative("--max-lag", opt.MaxLag); err != nil {
				return err
			}
			source, target, err := parsePair(args[0], below)
			if err != nil {
				return err
			}
			re, err := regexp.Compile(pattern)
			if err != nil {
				return dbpilot.Errorf(dbpilot.EINVALID, "--pattern %q: %v", pattern, err)
			}
			opt.To = target
			svc, done, err := sf.open(cmd.Context(), a, false)
			if err != nil {
				return err
			}
			defer done()
			all, err := svc.Clusters(cmd.Context())
			if err != nil {
				return err
			}
			var (
				replicas []dbpilot.InstanceKey
				down     *dbpilot.Instance // the source, when it did not answer
			)
			for _, c := range all {
				for _, i := range c.Instances {
					if i.Channel(source) != nil && !i.Key.Equal(target) && re.MatchString(i.Key.String()) {
						replicas = append(replicas, i.Key)
					}
					if i.Key.Equal(source) && !i.Reachable && i.LastError != "" {
						down = i
					}
				}
			}
			if len(replicas) == 0 {
				if down != nil {
					return dbpilot.Errorf(dbpilot.EUNAVAIL, "relocate-replicas: source %s does not answer: %s", source, down.LastError)
				}
				return dbpilot.Errorf(dbpilot.ENOTFOUND, "no replica of %s matches %q", source, pattern)
			}
			failed := 0
			for _, r := range replicas {
				rec, err := svc.Relocate(cmd.Context(), r, opt)
				switch {
				case err != nil:
					failed++
					fmt.Fprintf(a.stdout, "%s: not moved: %v\n", r, err)
				case opt.DryRun:
					fmt.Fprintf(a.stdout, "%s: would move below %s\n", r, target)
				default:
					fmt.Fprintf(a.stdout, "%s: moved below %s (recovery %d)\n", r, target, rec.ID)
				}
			}
			if failed > 0 {
				return errProblemsFound
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&below, "below", "", "the new source HOST:PORT (required)")
	cmd.Flags().StringVar(&pattern, "pattern", "", "only replicas whose HOST:PORT matches this regular expression")
	cmd.Flags().BoolVar(&opt.DryRun, "dry-run", false, "check and print; change nothing")
	cmd.Flags().Var(durationFlag(&opt.MaxLag, 0), "max-lag", "refuse a target that cannot catch up within this (default: switchover.max_lag, 10s)")
	return cmd
}
