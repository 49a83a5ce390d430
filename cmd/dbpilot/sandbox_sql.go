package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
)

func (a *app) sandboxSQL() *cobra.Command {
	var (
		asJSON       bool
		file         string
		queryTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sql NAME NODE {'SQL' | - | --file PATH}",
		Short: "Run SQL statements on a node as the admin user",
		Long: `Run a script of one or more SQL statements on a sandbox node as the admin
user, in order, on one session (USE, SET and temporary tables carry over),
printing each result set in turn. The script is the third argument, standard
input when that is "-", or the file named by --file.

Statements are split as the mariadb client splits them: at ";" outside
'strings', "strings", ` + "`names`" + ` and comments (-- , #, /* */), and the
client command DELIMITER changes the delimiter for bodies that hold
semicolons:

  DELIMITER //
  CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END//
  DELIMITER ;

The first statement that fails stops the script: the error names it by its
number and line, and prints it in full (passwords redacted). A script with an
unterminated string or comment is refused before anything runs.

Result sets print as aligned columns, separated by a blank line. With --json,
each result set prints as a JSON array of objects (one per row, NULL columns
left out), one array after the other; a statement that returns no rows
prints [].`,
		Example: `  dbpilot sandbox sql demo node1 'CREATE DATABASE app'
  dbpilot sandbox sql demo 2 'SHOW SLAVE STATUS'
  dbpilot sandbox sql demo 1 'CREATE DATABASE bb; CREATE TABLE bb.t (id int PRIMARY KEY); SELECT * FROM bb.t'
  dbpilot sandbox sql demo 1 - < schema.sql
  dbpilot sandbox sql demo 1 --file procedures.sql`,
		Args: rangeArgs(2, 3, "NAME NODE and a script ('SQL', - for standard input, or --file PATH)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			script, err := readScript(cmd, args, file)
			if err != nil {
				return err
			}
			stmts, err := mysql.SplitScript(script)
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINVALID, err, "sandbox sql: script")
			}
			if len(stmts) == 0 {
				return dbpilot.Errorf(dbpilot.EINVALID, "sandbox sql: the script holds no statement")
			}
			d, err := sandbox.Load(args[0])
			if err != nil {
				return err
			}
			n, err := d.Node(args[1])
			if err != nil {
				return err
			}
			opts := d.AdminOptions()
			opts.QueryTimeout = queryTimeout
			db, err := mysql.Open(cmd.Context(), n.Key(), opts)
			if err != nil {
				return err
			}
			defer db.Close()
			printed := 0
			return db.RunScript(cmd.Context(), stmts, func(_ mysql.Statement, sets []*mysql.Rows) error {
				if asJSON {
					if len(sets) == 0 {
						return writeJSON(a.stdout, []map[string]string{})
					}
					for _, rows := range sets {
						if err := writeJSON(a.stdout, rows.Maps()); err != nil {
							return err
						}
					}
					return nil
				}
				for _, rows := range sets {
					if printed > 0 {
						fmt.Fprintln(a.stdout)
					}
					printed++
					if err := writeResultSet(a.stdout, rows); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print result sets as JSON")
	cmd.Flags().StringVarP(&file, "file", "f", "", "read the script from `PATH` (- for standard input)")
	cmd.Flags().Var(durationFlag(&queryTimeout, mysql.DefaultQueryTimeout), "query-timeout", "time limit of each statement")
	return cmd
}

// readScript returns the script from the third argument, standard input
// ("-"), or --file.
func readScript(cmd *cobra.Command, args []string, file string) (string, error) {
	switch {
	case len(args) == 3 && file != "":
		return "", dbpilot.Errorf(dbpilot.EINVALID, "sandbox sql: give the script either as an argument or with --file, not both")
	case len(args) == 2 && file == "":
		return "", dbpilot.Errorf(dbpilot.EINVALID, "%s needs NAME NODE and a script ('SQL', - for standard input, or --file PATH) (see --help)", cmd.CommandPath())
	case len(args) == 3 && args[2] != "-":
		return args[2], nil
	case len(args) == 3 || file == "-":
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return "", dbpilot.WrapError(dbpilot.EINVALID, err, "sandbox sql: read the script from standard input")
		}
		return string(b), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		code := dbpilot.EINVALID
		if os.IsNotExist(err) {
			code = dbpilot.ENOTFOUND
		}
		return "", dbpilot.WrapError(code, err, "sandbox sql: read the script")
	}
	return string(b), nil
}

// writeResultSet prints rows as aligned columns under a header line; NULL
// prints as NULL and line breaks in values as blanks.
func writeResultSet(w io.Writer, rows *mysql.Rows) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(rows.Columns, "\t"))
	for _, r := range rows.Values {
		cells := make([]string, len(r))
		for i, v := range r {
			if v == nil {
				cells[i] = "NULL"
			} else {
				cells[i] = strings.ReplaceAll(*v, "\n", " ")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
