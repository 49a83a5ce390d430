// Package packaging holds what `make package` builds dbpilot's .deb from
// (nfpm.yaml, the systemd unit dbpilot.service, the maintainer scripts,
// the copyright header; scripts/package.sh stages the generated files) and
// the test of the package it builds. It has no Go code of its own.
package packaging
