package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
)

// cloneEnd resolves one side of a clone: HOST:PORT with the shared
// credentials, or SANDBOX[:NODE] with the sandbox's.
func cloneEnd(tf *targetFlags, addr, sb string, side string) (dbpilot.InstanceKey, mysql.Options, *sandbox.Descriptor, error) {
	switch {
	case addr != "" && sb != "":
		return dbpilot.InstanceKey{}, mysql.Options{}, nil, dbpilot.Errorf(dbpilot.EINVALID, "give --%s or --%s-sandbox, not both", side, side)
	case addr == "" && sb == "":
		return dbpilot.InstanceKey{}, mysql.Options{}, nil, dbpilot.Errorf(dbpilot.EINVALID, "name the %s server with --%s HOST:PORT or --%s-sandbox NAME[:NODE]", side, side, side)
	case sb != "":
		name, node, _ := strings.Cut(sb, ":")
		t := *tf
		t.sandbox, t.node = name, node
		if node == "" {
			t.node = "1"
		}
		key, opts, err := t.oneTarget(nil, "clone")
		if err != nil {
			return key, opts, nil, err
		}
		d, err := sandbox.Load(name)
		return key, opts, d, err
	}
	key, opts, err := tf.oneTarget([]string{addr}, "clone")
	return key, opts, nil, err
}

func (a *app) cloneCommand() *cobra.Command {
	var tf targetFlags
	var from, to, fromSB, toSB, replUser, replPassword string
	var replTLS mysql.TLSSettings
	var opt backup.CloneOptions
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "clone --from HOST:PORT|--from-sandbox NAME[:NODE] --to HOST:PORT|--to-sandbox NAME[:NODE] [--replicate]",
		Short: "Copy a server's databases to another server and optionally attach it as a replica",
		Long: `Dump the source (see dump), restore into the target without writing the
target's binary log (see restore), and with --replicate set the target's
replication position to the dump's GTID position and start replicating from
the source (MariaDB: SET GLOBAL gtid_slave_pos, CHANGE MASTER TO ...
MASTER_USE_GTID=slave_pos; MySQL: gtid_purged and SOURCE_AUTO_POSITION=1).
This is how the MariaDB GTID design provisions a new replica: no
transaction is lost or applied twice, and the new replica has no errant
transaction (checked at the end).

The dump goes to a temporary directory removed on success, or to --dir,
which is kept. The replication account comes from --repl-user and
--repl-password, $DBPILOT_REPL_USER and $DBPILOT_REPL_PASSWORD, or the
source sandbox's descriptor; it must exist on the source. The target's TLS to
the source (MASTER_SSL) comes from --repl-ssl-mode, --repl-ssl-ca,
--repl-ssl-cert and --repl-ssl-key (paths on the target's host; with a CA,
MASTER_SSL_VERIFY_SERVER_CERT=1), or from a source sandbox deployed with --tls.` + exitHelp,
		Example: `  dbpilot clone --from-sandbox prod --to-sandbox spare --replicate
  dbpilot clone --from 10.0.0.5:3306 --to 10.0.0.9:3306 --user admin --replicate --repl-user repl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			defer relaxGC()()
			fromKey, fromOpts, fromDesc, err := cloneEnd(&tf, from, fromSB, "from")
			if err != nil {
				return err
			}
			toKey, toOpts, _, err := cloneEnd(&tf, to, toSB, "to")
			if err != nil {
				return err
			}
			if fromDesc != nil {
				opt.Repl = fromDesc.Repl
			}
			if v := os.Getenv("DBPILOT_REPL_USER"); v != "" {
				opt.Repl.User = v
			}
			if v := os.Getenv("DBPILOT_REPL_PASSWORD"); v != "" {
				opt.Repl.Password = v
			}
			if replUser != "" {
				opt.Repl.User = replUser
			}
			if replPassword != "" {
				opt.Repl.Password = replPassword
			}
			if fromDesc != nil {
				opt.ReplTLS = fromDesc.ReplicationTLS()
			}
			if !replTLS.IsZero() {
				if err := mysql.ValidateReplicationTLS(replTLS, "--repl-ssl"); err != nil {
					return err
				}
				opt.ReplTLS = &replTLS
			}
			opt.Tool = "dbpilot " + version
			opt.Progress, opt.ProgressTTY = a.progressOut(quiet)
			res, err := backup.Clone(cmd.Context(), fromKey, fromOpts, toKey, toOpts, opt)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			fmt.Fprintf(a.stdout, "cloned %s into %s: tables %d, rows %d; dump at GTID position %q\n",
				fromKey, toKey, res.Restore.Tables, res.Restore.Rows, res.Position)
			if res.Dir != "" {
				fmt.Fprintf(a.stdout, "  dump kept in %s\n", res.Dir)
			}
			if res.Replicating {
				fmt.Fprintf(a.stdout, "  %s replicates from %s (no errant transactions)\n", toKey, fromKey)
			}
			return nil
		},
	}
	tf.register(cmd)
	// Bulk statements run as long as they need; the context bounds them.
	_ = cmd.Flags().MarkHidden("query-timeout")
	// --sandbox/--node make no sense here: each side names its own.
	_ = cmd.Flags().MarkHidden("sandbox")
	_ = cmd.Flags().MarkHidden("node")
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "source server HOST:PORT")
	f.StringVar(&to, "to", "", "target server HOST:PORT")
	f.StringVar(&fromSB, "from-sandbox", "", "source: a sandbox node, NAME[:NODE] (default node1)")
	f.StringVar(&toSB, "to-sandbox", "", "target: a sandbox node, NAME[:NODE] (default node1)")
	f.BoolVar(&opt.Replicate, "replicate", false, "attach the target as a replica of the source at the dump's GTID position")
	f.StringVar(&replUser, "repl-user", "", "replication account the target connects to the source with")
	f.StringVar(&replPassword, "repl-password", "", "its password (prefer $DBPILOT_REPL_PASSWORD)")
	f.StringVar((*string)(&replTLS.Mode), "repl-ssl-mode", "", "the target's TLS to the source: "+mysql.TLSModes+" (MASTER_SSL; default verify-identity with --repl-ssl-ca)")
	f.StringVar(&replTLS.CA, "repl-ssl-ca", "", "MASTER_SSL_CA: the CA file as the target's host sees it")
	f.StringVar(&replTLS.Cert, "repl-ssl-cert", "", "MASTER_SSL_CERT: a client certificate file on the target's host")
	f.StringVar(&replTLS.Key, "repl-ssl-key", "", "MASTER_SSL_KEY: its key file on the target's host")
	f.StringVar(&opt.Dir, "dir", "", "keep the dump in this directory (default: a temporary one, removed)")
	f.IntVar(&opt.Threads, "threads", 4, "worker connections for dump and restore")
	f.BoolVar(&opt.DropExisting, "drop-existing", false, "replace tables that exist on the target")
	f.StringSliceVar(&opt.Filter.Databases, "databases", nil, "only these databases (comma-separated)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}
