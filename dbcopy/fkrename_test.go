package dbcopy

import "testing"

func TestRenameReferences(t *testing.T) {
	rename := func(db string) string {
		if n, ok := map[string]string{"billing": "billing_v2", "we`ird": "new`name", "shop": "shop2"}[db]; ok {
			return n
		}
		return db
	}
	for _, tc := range []struct{ in, want string }{
		{ // MariaDB's SHOW CREATE TABLE: a reference to another database, one to the same.
			"CREATE TABLE `orders` (\n  `id` int(11) NOT NULL,\n  `acct` int(11) DEFAULT NULL,\n  `cust` int(11) DEFAULT NULL,\n  PRIMARY KEY (`id`),\n" +
				"  CONSTRAINT `fk_acct` FOREIGN KEY (`acct`) REFERENCES `billing`.`accounts` (`id`),\n  CONSTRAINT `fk_cust` FOREIGN KEY (`cust`) REFERENCES `customers` (`id`) ON DELETE CASCADE\n) ENGINE=InnoDB",
			"CREATE TABLE `orders` (\n  `id` int(11) NOT NULL,\n  `acct` int(11) DEFAULT NULL,\n  `cust` int(11) DEFAULT NULL,\n  PRIMARY KEY (`id`),\n" +
				"  CONSTRAINT `fk_acct` FOREIGN KEY (`acct`) REFERENCES `billing_v2`.`accounts` (`id`),\n  CONSTRAINT `fk_cust` FOREIGN KEY (`cust`) REFERENCES `customers` (`id`) ON DELETE CASCADE\n) ENGINE=InnoDB",
		},
		{"... REFERENCES `we``ird`.`t` (`a`)", "... REFERENCES `new``name`.`t` (`a`)"},
		{"... REFERENCES `other`.`t` (`a`)", "... REFERENCES `other`.`t` (`a`)"},
		// Not a foreign key: a column named references, a comment, a string default.
		{"`references` int, `x` varchar(40) DEFAULT 'REFERENCES `shop`.`t`' COMMENT 'see REFERENCES `shop`.`t`'",
			"`references` int, `x` varchar(40) DEFAULT 'REFERENCES `shop`.`t`' COMMENT 'see REFERENCES `shop`.`t`'"},
		{"COMMENT 'it''s REFERENCES `shop`.`t`' REFERENCES `shop`.`t` (`a`)", "COMMENT 'it''s REFERENCES `shop`.`t`' REFERENCES `shop2`.`t` (`a`)"},
		{"MYREFERENCES `shop`.`t`", "MYREFERENCES `shop`.`t`"},
		{"references `shop`.`t`", "references `shop2`.`t`"},
		{"REFERENCES", "REFERENCES"},
		// In DDL from the binary log: bare names, comments.
		{"ALTER TABLE orders ADD FOREIGN KEY (a) REFERENCES billing.accounts(id)", "ALTER TABLE orders ADD FOREIGN KEY (a) REFERENCES `billing_v2`.accounts(id)"},
		{"ALTER TABLE o ADD FOREIGN KEY (a) REFERENCES billing . accounts(id)", "ALTER TABLE o ADD FOREIGN KEY (a) REFERENCES billing . accounts(id)"},
		{"/* REFERENCES billing.x */ ALTER TABLE o ADD FOREIGN KEY (a) references accounts(id)", "/* REFERENCES billing.x */ ALTER TABLE o ADD FOREIGN KEY (a) references accounts(id)"},
		{"REFERENCES other.t", "REFERENCES other.t"},
		{"REFERENCES `billing`", "REFERENCES `billing`"},
		{"REFERENCES `unterminated", "REFERENCES `unterminated"},
		{"REFERENCES `shop`", "REFERENCES `shop`"},
	} {
		if got := renameReferences(tc.in, rename); got != tc.want {
			t.Errorf("renameReferences(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func FuzzRenameReferences(f *testing.F) {
	f.Add("CONSTRAINT `f` FOREIGN KEY (`a`) REFERENCES `billing`.`t` (`id`)")
	f.Add("'unterminated REFERENCES `x`")
	f.Fuzz(func(t *testing.T, s string) {
		// Renaming to the same name changes nothing.
		if got := renameReferences(s, func(db string) string { return db }); got != s {
			t.Fatalf("identity rename changed %q to %q", s, got)
		}
	})
}
