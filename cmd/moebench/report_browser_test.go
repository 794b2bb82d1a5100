package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browsers are the names a headless Chromium goes by; MOEBENCH_CHROME,
// when set, names one.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell", "headless-shell", "chrome"}

func findBrowser() string {
	if p := os.Getenv("MOEBENCH_CHROME"); p != "" {
		return p
	}
	for _, b := range browsers {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// The report renders in a real browser: every plot present and sized,
// nothing logged as an error, nothing fetched but the page itself.
// Makefile runs this test on its own, verbosely, so a skip shows.
func TestReportInBrowser(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		t.Skipf("no Chromium or Chrome found (looked for %s on PATH, or MOEBENCH_CHROME): the HTML report's rendering is not checked; install one, e.g. apt-get install chromium", strings.Join(browsers, ", "))
	}
	files := reportInputs(t)
	page := filepath.Join(t.TempDir(), "report.html")
	if _, _, err := runCLI(t, append(append([]string{"report"}, files...), "--out", page)...); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 1000))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		problems []string
		fetched  []string
	)
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				problems = append(problems, fmt.Sprintf("console.%s", e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				problems = append(problems, "log: "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			fetched = append(fetched, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", browser, err)
	}
	for _, enable := range []func() error{
		func() error { _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); return err },
		func() error { _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); return err },
	} {
		if err := enable(); err != nil {
			t.Fatalf("%s: %v", browser, err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("%s: %v", browser, err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	type box struct {
		W, H          float64
		Paths, Texts  int
		Width, Height string
	}
	plots, err := chromedp.Run(ctx, chromedp.Evaluate[[]box](`Array.from(document.querySelectorAll("figure.plot svg")).map(s => {
		const r = s.getBoundingClientRect();
		return {W: r.width, H: r.height, Paths: s.querySelectorAll("path").length, Texts: s.querySelectorAll("text").length,
			Width: s.getAttribute("width"), Height: s.getAttribute("height")};
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if title != "moebench report" {
		t.Errorf("title %q", title)
	}
	if len(plots) != len(files) {
		t.Fatalf("%d plots rendered for %d results", len(plots), len(files))
	}
	for i, p := range plots {
		if p.W < 300 || p.H < 200 || p.Paths < 5 || p.Texts < 5 {
			t.Errorf("plot %d (%s): %.0f × %.0f px with %d paths and %d texts (declared %s × %s)", i, filepath.Base(files[i]), p.W, p.H, p.Paths, p.Texts, p.Width, p.Height)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the browser reported: %s", strings.Join(problems, "; "))
	}
	for _, u := range fetched {
		if !strings.HasPrefix(u, "file://") {
			t.Errorf("the page fetched %s", u)
		}
	}
}
