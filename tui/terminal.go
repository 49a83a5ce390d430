package tui

import (
	"context"
	"os"

	"golang.org/x/term"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return f != nil && term.IsTerminal(int(f.Fd())) }

// RunTerminal runs top full screen on out, a terminal: the alternate screen,
// the cursor hidden, redrawn on every refresh and on SIGWINCH at the
// terminal's current size. When in is a terminal too it is put in raw mode
// and read for keys (see Options.Keys). The terminal is restored when Run
// returns, fails or panics.
func RunTerminal(ctx context.Context, src Source, in, out *os.File, o Options) (err error) {
	o.Interactive = true
	o.Out = out
	o.Color = true
	ofd := int(out.Fd())
	o.Size = func() (int, int) {
		w, h, err := term.GetSize(ofd)
		if err != nil {
			return 0, 0
		}
		return w, h
	}
	if IsTerminal(in) {
		ifd := int(in.Fd())
		state, err := term.MakeRaw(ifd)
		if err != nil {
			return err
		}
		// Deferred calls run when Run panics too.
		defer term.Restore(ifd, state)
		o.Keys = in
	}
	out.WriteString("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J") // alternate screen, hide cursor, clear
	defer out.WriteString("\x1b[?25h\x1b[?1049l")

	resize, stop := notifyResize()
	defer stop()
	o.Resize = resize
	return Run(ctx, src, o)
}
