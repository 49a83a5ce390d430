package browser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/chromedp/chromedp"
)

// TrustCA returns the option that makes Chromium trust the CA whose PEM
// certificate is caFile, as an administrator would on a desktop: Chromium
// on Linux trusts the roots of the user's NSS database
// ($HOME/.pki/nssdb), so the option points HOME at home (a directory of
// the caller's, e.g. t.TempDir()) and adds the CA there with NSS's certutil
// (Debian's libnss3-tools). Certificate errors stay errors: a certificate
// that CA did not sign, or one for another name, is still refused.
func TrustCA(home, caFile string) (chromedp.ExecAllocatorOption, error) {
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		return nil, fmt.Errorf("browser: certutil not found (install libnss3-tools: make test-deps): %w", err)
	}
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"-N", "-d", "sql:" + db, "--empty-password"},
		{"-A", "-d", "sql:" + db, "-n", "dbpilot test CA", "-t", "C,,", "-i", caFile},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("browser: certutil %v: %v: %s", args, err, out)
		}
	}
	return chromedp.Env("HOME=" + home), nil
}
