module moebench

go 1.26

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/montanaflynn/stats v0.14.0
	github.com/spf13/pflag v1.1.0
	go.uber.org/zap v1.28.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/go-json-experiment/json v0.0.0-20260214004413-d219187c3433 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)
