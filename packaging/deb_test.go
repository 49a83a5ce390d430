package packaging

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dbpilot/dbpilot/internal/testutil"
)

// The version the test package is built with, and its Debian form
// (scripts/package.sh: no v, git describe's hyphens as +).
const (
	testVersion    = "v1.2.3-4-gabcdef0"
	testDebVersion = "1.2.3+4+gabcdef0"
)

// need returns the path of a tool the test runs: missing, the test skips,
// or fails with CI=true (scripts/install-deps.sh --test installs them).
func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("%s not found (CI=true): run scripts/install-deps.sh --test", tool)
		}
		t.Skipf("%s not found: run scripts/install-deps.sh --test", tool)
	}
	return p
}

var (
	buildOnce sync.Once
	builtDeb  string
	buildErr  error
	buildOut  []byte
)

// deb builds the package once per test binary with scripts/package.sh
// (what `make package` runs), into a directory of its own, and returns
// its path.
func deb(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: building the package links dbpilot twice (about 40 s)")
	}
	need(t, "bash")
	need(t, "dpkg-deb")
	buildOnce.Do(func() {
		dist, err := os.MkdirTemp("", "dbpilot-deb")
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("bash", "../scripts/package.sh")
		cmd.Env = append(os.Environ(), "VERSION="+testVersion, "DIST="+dist, "GOARCH="+runtime.GOARCH)
		buildOut, buildErr = cmd.CombinedOutput()
		builtDeb = filepath.Join(dist, "dbpilot_"+testDebVersion+"_"+runtime.GOARCH+".deb")
	})
	if buildErr != nil {
		t.Fatalf("scripts/package.sh: %v\n%s", buildErr, buildOut)
	}
	return builtDeb
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDeb != "" {
		os.RemoveAll(filepath.Dir(builtDeb))
	}
	os.Exit(code)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// unpacked extracts the package into a directory of the test.
func unpacked(t *testing.T) string {
	t.Helper()
	pkg := deb(t)
	root := t.TempDir()
	run(t, "dpkg-deb", "-x", pkg, root)
	return root
}

// TestDebContents: every installed path with its owner and mode, as
// dpkg-deb -c lists them; the administrator's dbpilot.yml is not shipped.
func TestDebContents(t *testing.T) {
	pkg := deb(t)
	listed := map[string]string{} // path: "mode owner/group"
	for _, line := range strings.Split(strings.TrimSpace(run(t, "dpkg-deb", "-c", pkg)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb -c line %q", line)
		}
		listed[strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")] = f[0] + " " + f[1]
	}
	const file, exe, conf = "-rw-r--r-- root/root", "-rwxr-xr-x root/root", "drwxr-x--- root/dbpilot"
	want := map[string]string{
		"/usr/bin/dbpilot":                                  exe,
		"/lib/systemd/system/dbpilot.service":               file,
		"/etc/dbpilot":                                      conf,
		"/etc/dbpilot/dbpilot.yml.example":                  file,
		"/var/lib/dbpilot":                                  "drwxr-x--- dbpilot/dbpilot",
		"/usr/share/man/man1/dbpilot.1.gz":                  file,
		"/usr/share/man/man1/dbpilot-serve.1.gz":            file,
		"/usr/share/man/man1/dbpilot-sandbox-deploy.1.gz":   file,
		"/usr/share/bash-completion/completions/dbpilot":    file,
		"/usr/share/zsh/vendor-completions/_dbpilot":        file,
		"/usr/share/fish/vendor_completions.d/dbpilot.fish": file,
		"/usr/share/doc/dbpilot/copyright":                  file,
	}
	for path, w := range want {
		if got, ok := listed[path]; !ok {
			t.Errorf("%s is not in the package", path)
		} else if got != w {
			t.Errorf("%s: %s, want %s", path, got, w)
		}
	}
	if _, ok := listed["/etc/dbpilot/dbpilot.yml"]; ok {
		t.Error("the package ships /etc/dbpilot/dbpilot.yml: an upgrade could touch the administrator's file")
	}
	man := 0
	for path, got := range listed {
		if strings.HasPrefix(path, "/usr/share/man/man1/") && strings.HasSuffix(path, ".1.gz") {
			man++
			if got != file {
				t.Errorf("%s: %s, want %s", path, got, file)
			}
		}
	}
	if man < 40 { // one per command: dbpilot has more than 40
		t.Errorf("%d man pages, want one per command", man)
	}
}

// TestDebFields: the control fields (dpkg-deb -I / -f) and the conffiles.
func TestDebFields(t *testing.T) {
	pkg := deb(t)
	info := run(t, "dpkg-deb", "-I", pkg)
	for _, want := range []string{
		"Package: dbpilot\n",
		"Version: " + testDebVersion + "\n",
		"Architecture: " + runtime.GOARCH + "\n",
		"Maintainer: dbpilot maintainers <",
		"Recommends: mariadb-client | default-mysql-client\n",
		"Homepage: https://github.com/dbpilot/dbpilot\n",
		"Section: database\n",
		"Description: Deploy, monitor and fail over MySQL/MariaDB replication\n",
	} {
		if !strings.Contains(info, " "+want) {
			t.Errorf("dpkg-deb -I lacks %q:\n%s", want, info)
		}
	}
	if strings.Contains(info, " Depends:") {
		t.Errorf("the static binary depends on nothing:\n%s", info)
	}
	for _, script := range []string{"preinst", "postinst", "prerm", "postrm"} {
		if !strings.Contains(info, " "+script+" ") {
			t.Errorf("dpkg-deb -I lists no %s:\n%s", script, info)
		}
	}
	if got := strings.TrimSpace(run(t, "dpkg-deb", "-I", pkg, "conffiles")); got != "/etc/dbpilot/dbpilot.yml.example" {
		t.Errorf("conffiles %q, want only the example configuration", got)
	}
}

// TestDebBinary: the packaged binary runs from an unpacked root and prints
// the version it was stamped with; its example configuration passes the
// unit's check, and a missing configuration fails it with one line naming
// the file, exit 2.
func TestDebBinary(t *testing.T) {
	root := unpacked(t)
	bin := filepath.Join(root, "usr/bin/dbpilot")
	if got := strings.TrimSpace(run(t, bin, "--version")); got != "dbpilot version "+testVersion {
		t.Errorf("--version: %q, want dbpilot version %s", got, testVersion)
	}
	example := filepath.Join(root, "etc/dbpilot/dbpilot.yml.example")
	out := run(t, bin, "serve", "--config", example, "--check-config")
	if want := "is valid: 1 cluster(s), listen 127.0.0.1:7070, state /var/lib/dbpilot/state.db\n"; !strings.HasSuffix(out, want) {
		t.Errorf("--check-config of the example: %q, want it to end in %q", out, want)
	}
	missing := filepath.Join(root, "etc/dbpilot/dbpilot.yml")
	cmd := exec.Command(bin, "serve", "--config", missing, "--check-config")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("--check-config without the file: %v, want exit 2", err)
	}
	if line := stderr.String(); strings.Count(line, "\n") != 1 || !strings.Contains(line, "config "+missing+": no such file") || stdout.Len() != 0 {
		t.Errorf("--check-config without the file printed %q and %q, want one line naming %s", stdout.String(), line, missing)
	}
}

// TestDebUnit: the unit passes systemd-analyze verify without a warning,
// runs serve as dbpilot with the configuration checked first, and has the
// hardening asked for. systemd-analyze verify checks that the command
// exists: it verifies a copy of the unit whose /usr/bin/dbpilot is the
// unpacked binary, the rest unchanged.
func TestDebUnit(t *testing.T) {
	analyze := need(t, "systemd-analyze")
	root := unpacked(t)
	b, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/dbpilot.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	copyDir := t.TempDir()
	local := filepath.Join(copyDir, "dbpilot.service")
	if err := os.WriteFile(local, []byte(strings.ReplaceAll(unit, "/usr/bin/dbpilot", filepath.Join(root, "usr/bin/dbpilot"))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", local).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, want := range []string{
		"User=dbpilot", "Group=dbpilot",
		"ExecStartPre=/usr/bin/dbpilot serve --config /etc/dbpilot/dbpilot.yml --check-config",
		"ExecStart=/usr/bin/dbpilot serve --config /etc/dbpilot/dbpilot.yml",
		"Restart=on-failure", "StateDirectory=dbpilot", "ConfigurationDirectory=dbpilot",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes",
		"ProtectKernelTunables=yes", "ProtectKernelModules=yes", "ProtectKernelLogs=yes", "ProtectControlGroups=yes",
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "RestrictNamespaces=yes", "LockPersonality=yes",
		"MemoryDenyWriteExecute=yes", "SystemCallArchitectures=native", "CapabilityBoundingSet=",
		"WantedBy=multi-user.target",
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(unit) {
			t.Errorf("the unit lacks the line %q", want)
		}
	}
	// systemctl reload sends SIGHUP, which reloads the HTTPS pair and
	// never ends serve (TestServeEndToEnd).
	if !strings.Contains(unit, "ExecReload=/bin/kill -HUP $MAINPID") {
		t.Error("the unit lacks ExecReload sending SIGHUP")
	}
}

// TestDebManPage: dbpilot-serve(1) documents --config and --check-config
// among its options (bold, in roff).
func TestDebManPage(t *testing.T) {
	root := unpacked(t)
	page := run(t, "gzip", "-dc", filepath.Join(root, "usr/share/man/man1/dbpilot-serve.1.gz"))
	for _, want := range []string{`.TH "DBPILOT" "1"`, `.SH OPTIONS`, `\fB--config\fP=""`, `\fB--check-config\fP`} {
		if !strings.Contains(page, want) {
			t.Errorf("dbpilot-serve.1 lacks %q", want)
		}
	}
}

// TestDebBashCompletion: with bash-completion and the packaged script
// sourced, completing `dbpilot sand` offers sandbox (the script asks the
// packaged binary, first on PATH, through dbpilot __complete).
func TestDebBashCompletion(t *testing.T) {
	bash := need(t, "bash")
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		if testutil.InCI() {
			t.Fatalf("%s: %v (CI=true): run scripts/install-deps.sh --test", bashCompletion, err)
		}
		t.Skipf("%s: %v: run scripts/install-deps.sh --test", bashCompletion, err)
	}
	root := unpacked(t)
	script := `source ` + bashCompletion + `
source "$ROOT/usr/share/bash-completion/completions/dbpilot"
COMP_WORDS=(dbpilot sand); COMP_CWORD=1; COMP_LINE="dbpilot sand"; COMP_POINT=${#COMP_LINE}
__start_dbpilot dbpilot sand dbpilot
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "ROOT="+root, "PATH="+filepath.Join(root, "usr/bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	// stderr: compopt warns that no completion is running (bash's
	// own completion is not driving this one).
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "sandbox" {
		t.Errorf("completing 'dbpilot sand': %q, want sandbox (stderr: %s)", got, stderr.String())
	}
}

// TestDebCopyright: the copyright file names every module compiled into
// the packaged binary (as go version -m lists them) and the Go runtime,
// each followed by its licence.
func TestDebCopyright(t *testing.T) {
	root := unpacked(t)
	b, err := os.ReadFile(filepath.Join(root, "usr/share/doc/dbpilot/copyright"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, "Compiled into /usr/bin/dbpilot: the Go runtime and standard library (go") {
		t.Error("the copyright file does not name the Go runtime")
	}
	deps := 0
	for _, line := range strings.Split(run(t, "go", "version", "-m", filepath.Join(root, "usr/bin/dbpilot")), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "dep" {
			continue
		}
		deps++
		head := "Compiled into /usr/bin/dbpilot: " + f[1] + " " + f[2]
		i := strings.Index(text, head)
		if i < 0 {
			t.Errorf("the copyright file does not name %s %s", f[1], f[2])
			continue
		}
		// The module's section: its head line, then its licence up to the
		// next section's separator.
		section, _, _ := strings.Cut(text[i+len(head):], "\n-----")
		if _, licence, _ := strings.Cut(section, "\n"); len(strings.TrimSpace(licence)) < 20 {
			t.Errorf("no licence text after %q: %q", head, section)
		}
	}
	if deps < 20 {
		t.Errorf("go version -m lists %d modules in the binary", deps)
	}
}
