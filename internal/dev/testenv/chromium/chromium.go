// Package chromium is the headless Chromium the tests drive web pages in (tests/browser,
// tests/traces): where it is, and the options it starts with. A package of its own so
// that only the tests that start it build chromedp.
package chromium

import (
	"io"
	"os"

	"github.com/chromedp/chromedp"
)

// Path is the Chromium binary: TEMCO_CHROMIUM, else Debian's (make chromium installs it).
func Path() string {
	if p := os.Getenv("TEMCO_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// Options start Chromium headless with profile as its user data and its output to log,
// quiet on the network (no updates, sync or QUIC), and extra after them.
func Options(profile string, log io.Writer, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	return append(append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path()),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 800),
		chromedp.NoSandbox,
		chromedp.Flag("headless", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.CombinedOutput(log),
	), extra...)
}
