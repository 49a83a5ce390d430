package main

import (
	"fmt"
	"regexp"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/spf13/cobra"
)

// gtidSet is a parsed GTID set of either flavor.
type gtidSet struct {
	mysql  bool
	maria  gtid.MariaSet
	mariaL gtid.MariaList // when the text was a plain list
	isList bool
	mysqlS gtid.MySQLSet
}

var uuidRE = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// parseGTIDArg parses s as flavor ("mysql", "mariadb" or "" to guess: a UUID
// means MySQL).
func parseGTIDArg(s, flavor string) (gtidSet, error) {
	var g gtidSet
	switch flavor {
	case "mysql":
		g.mysql = true
	case "mariadb":
	case "":
		g.mysql = uuidRE.MatchString(s)
	default:
		return g, dbpilot.Errorf(dbpilot.EINVALID, "--flavor %q: use mysql or mariadb", flavor)
	}
	var err error
	if g.mysql {
		g.mysqlS, err = gtid.ParseMySQLSet(s)
	} else {
		if l, lerr := gtid.ParseMariaList(s); lerr == nil {
			g.mariaL, g.isList = l, true
		}
		g.maria, err = gtid.ParseMariaSet(s)
	}
	if err != nil {
		return g, dbpilot.WrapError(dbpilot.EINVALID, err, "")
	}
	return g, nil
}

func parseGTIDPair(a, b, flavor string) (gtidSet, gtidSet, error) {
	x, err := parseGTIDArg(a, flavor)
	if err != nil {
		return x, x, err
	}
	if flavor == "" && x.mysql {
		flavor = "mysql"
	} else if flavor == "" && a != "" {
		flavor = "mariadb"
	}
	if flavor == "" && b != "" && uuidRE.MatchString(b) {
		flavor = "mysql"
		if x, err = parseGTIDArg(a, flavor); err != nil {
			return x, x, err
		}
	}
	y, err := parseGTIDArg(b, flavor)
	return x, y, err
}

func (a *app) gtidCommand() *cobra.Command {
	var flavor string
	cmd := &cobra.Command{
		Use:   "gtid",
		Short: "Compute with GTID sets: canonical form, union, subtract, errant, compare",
		Long: `Compute with GTID sets offline, the same way dbpilot's analysis and failover do.

MariaDB: GTID lists as in @@gtid_binlog_pos / @@gtid_binlog_state
("0-1-100,1-2-5"), where 0-1-100 means sequence numbers 1..100 written by
server 1 in domain 0; differences print as ranges ("0-1:101-150").
MySQL: GTID sets as in @@gtid_executed ("uuid:1-5:7,uuid:tag:1-3").
The flavor is guessed (a UUID means MySQL) unless --flavor is given.` + exitHelp,
	}
	cmd.PersistentFlags().StringVar(&flavor, "flavor", "", "mysql or mariadb (default: guess from the text)")
	pr := func(s string) { fmt.Fprintln(a.stdout, s) }
	// pair builds a subcommand taking two GTID sets A and B.
	pair := func(c *cobra.Command, names string, f func(x, y gtidSet) error) *cobra.Command {
		c.Args = exactArgs(2, names)
		c.RunE = func(_ *cobra.Command, args []string) error {
			x, y, err := parseGTIDPair(args[0], args[1], flavor)
			if err != nil {
				return err
			}
			return f(x, y)
		}
		return c
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "canonical SET",
		Short:   "Print a GTID set in canonical form",
		Example: "  dbpilot gtid canonical '1-2-5, 0-1-100'\n  dbpilot gtid canonical 'A1B2C3D4-0000-0000-0000-000000000001:1-3:4-9'",
		Args:    exactArgs(1, "SET"),
		RunE: func(_ *cobra.Command, args []string) error {
			g, err := parseGTIDArg(args[0], flavor)
			if err != nil {
				return err
			}
			switch {
			case g.mysql:
				pr(g.mysqlS.String())
			case g.isList:
				pr(g.mariaL.String())
			default:
				pr(g.maria.String())
			}
			return nil
		},
	})
	cmd.AddCommand(pair(&cobra.Command{Use: "union A B", Short: "Print A ∪ B"}, "A B", func(x, y gtidSet) error {
		switch {
		case x.mysql:
			pr(x.mysqlS.Union(y.mysqlS).String())
		case x.isList && y.isList:
			pr(x.mariaL.Union(y.mariaL).String())
		default:
			pr(x.maria.Union(y.maria).String())
		}
		return nil
	}))
	cmd.AddCommand(pair(&cobra.Command{Use: "subtract A B", Short: "Print A − B: the transactions in A that B lacks"}, "A B", func(x, y gtidSet) error {
		if x.mysql {
			pr(x.mysqlS.Subtract(y.mysqlS).String())
		} else {
			pr(x.maria.Subtract(y.maria).String())
		}
		return nil
	}))
	cmd.AddCommand(pair(&cobra.Command{
		Use:   "errant REPLICA SOURCE",
		Short: "Print the errant transactions of a replica: what it has that its source lacks (exit 1 when any)",
		Long: `Print what a replica has that its source lacks. Give MariaDB's @@gtid_binlog_state
of both servers, or MySQL's @@gtid_executed. Exits 1 when there are errant transactions.`,
		Example: "  dbpilot gtid errant '0-1-10,0-2-3' '0-1-12'",
	}, "REPLICA SOURCE", func(x, y gtidSet) error {
		var out string
		if x.mysql {
			out = gtid.ErrantMySQL(x.mysqlS, y.mysqlS).String()
		} else {
			if !x.isList || !y.isList {
				return dbpilot.Errorf(dbpilot.EINVALID, "errant takes MariaDB GTID lists (@@gtid_binlog_state), not ranges")
			}
			out = gtid.ErrantMariaDB(x.mariaL, y.mariaL).String()
		}
		pr(out)
		if out != "" {
			return errProblemsFound
		}
		return nil
	}))
	cmd.AddCommand(pair(&cobra.Command{
		Use:   "compare A B",
		Short: "Compare two positions per MariaDB domain or MySQL source UUID: which is ahead, and where they diverge",
	}, "A B", func(x, y gtidSet) error {
		if x.mysql {
			for _, c := range gtid.CompareMySQLSets(x.mysqlS, y.mysqlS) {
				id := c.UUID
				if c.Tag != "" {
					id += ":" + c.Tag
				}
				fmt.Fprintf(a.stdout, "%s: A %s B", id, c.Order)
				if !c.OnlyA.IsEmpty() {
					fmt.Fprintf(a.stdout, "; only in A: %s", c.OnlyA)
				}
				if !c.OnlyB.IsEmpty() {
					fmt.Fprintf(a.stdout, "; only in B: %s", c.OnlyB)
				}
				fmt.Fprintln(a.stdout)
			}
			return nil
		}
		if !x.isList || !y.isList {
			return dbpilot.Errorf(dbpilot.EINVALID, "compare takes MariaDB GTID positions (e.g. @@gtid_current_pos), not ranges")
		}
		for _, c := range gtid.CompareMariaPositions(x.mariaL, y.mariaL) {
			pr(c.String())
		}
		return nil
	}))
	return cmd
}
