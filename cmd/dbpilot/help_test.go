package main

import (
	"strings"
	"testing"
)

// TestRootHelp: `dbpilot --help` describes the whole tool: every command is
// named in its text and listed under one of its groups, so a new command
// that is left out fails here.
func TestRootHelp(t *testing.T) {
	code, out, errOut := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Sandboxes:", "Reading servers:", "The daemon:", "Topology changes:", "Backup and copy:", "Galera:", "Queries:", "Exit status:", "docs/config-reference.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	a := &app{}
	root := a.rootCommand()
	for _, c := range root.Commands() {
		name := c.Name()
		if name == "help" || name == "completion" {
			continue
		}
		if c.GroupID == "" {
			t.Errorf("command %s is in no group of --help (add it to commandGroups)", name)
		}
		if !strings.Contains(rootHelp, "'"+name+"'") {
			t.Errorf("--help's text does not describe command %s (name it as '%s' in rootHelp)", name, name)
		}
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("--help does not list command %s", name)
		}
	}
	// Every group named in commandGroups holds a command that exists.
	for _, g := range commandGroups {
		for _, n := range g.commands {
			if c, _, err := root.Find([]string{n}); err != nil || c.Name() != n {
				t.Errorf("commandGroups names %q, which is not a command", n)
			}
		}
	}
}

// TestCommandHelp: every command's --help answers with exit 0 and its
// usage line, and serve's points at the configuration reference.
func TestCommandHelp(t *testing.T) {
	a := &app{}
	for _, c := range a.rootCommand().Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		code, out, errOut := runCLI(t, c.Name(), "--help")
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "dbpilot "+c.Name()) {
			t.Errorf("%s --help: exit %d, stdout %.200q, stderr %q", c.Name(), code, out, errOut)
		}
	}
	if _, out, _ := runCLI(t, "serve", "--help"); !strings.Contains(out, "docs/config-reference.md") {
		t.Error("serve --help does not name docs/config-reference.md")
	}
}
