package flagvalue_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"moebench/internal/flagvalue"
	"moebench/internal/report"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{nil, nil},
		{[]string{""}, nil},
		{[]string{"a"}, []string{"a"}},
		{[]string{"a, b,,c"}, []string{"a", "b", "c"}},
		{[]string{"a", " b ,c", ","}, []string{"a", "b", "c"}},
	} {
		if got := flagvalue.Split(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// One-value flags read and show as pflag's own IntVar and StringVar do,
// so that help and errors do not tell them apart.
func TestOneValue(t *testing.T) {
	t.Parallel()
	var ints []int
	var strs []string
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Var(&flagvalue.Int{V: &ints}, "n", "a number")
	fs.Var(&flagvalue.String{V: &strs}, "s", "a name")
	ref := pflag.NewFlagSet("t", pflag.ContinueOnError)
	ref.Int("n", 0, "a number")
	ref.String("s", "", "a name")
	if got, want := fs.FlagUsages(), ref.FlagUsages(); got != want {
		t.Errorf("usage:\n%s\nwant:\n%s", got, want)
	}
	for _, tc := range []struct {
		args []string
		n    []int
		s    []string
		err  string
	}{
		{nil, nil, nil, ""},
		{[]string{"--n", "0x10", "--s", "x"}, []int{16}, []string{"x"}, ""},
		{[]string{"--n", "3", "--n", "4"}, []int{4}, nil, ""},
		{[]string{"--n", "many"}, nil, nil, `invalid argument "many" for "--n" flag`},
	} {
		ints, strs = nil, nil
		err := fs.Parse(tc.args)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want %q", tc.args, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.err == "" && (!slices.Equal(ints, tc.n) || !slices.Equal(strs, tc.s)):
			t.Errorf("%q: %v %q, want %v %q", tc.args, ints, strs, tc.n, tc.s)
		}
	}
	if flagvalue.First([]int(nil)) != 0 || flagvalue.First([]string{"a", "b"}) != "a" {
		t.Error("First")
	}
}

func TestParseError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// A list's items go through strconv, whose wording is replaced.
		{[]string{"--ns", "1,abc"}, `invalid argument "1,abc" for "--ns" flag: not a whole number`},
		{[]string{"--ns", "99999999999999999999"}, `invalid argument "99999999999999999999" for "--ns" flag: out of range`},
		{[]string{"--fs", "x"}, `invalid argument "x" for "--fs" flag: not a number`},
		{[]string{"--ns", long}, "invalid argument " + report.Quote(long) + ` for "--ns" flag: not a whole number`},
		// pflag's own wording of a single value stays.
		{[]string{"--n", long}, "invalid argument " + report.Quote(long) + ` for "--n" flag: must be an integer`},
		{[]string{"--" + long}, "unknown flag " + report.Quote("--"+long)},
		{[]string{"--nope"}, "unknown flag: --nope"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(nopWriter{})
		fs.Int("n", 0, "")
		fs.IntSlice("ns", nil, "")
		fs.Float64Slice("fs", nil, "")
		err := fs.Parse(tc.args)
		if err == nil {
			t.Fatalf("%q: parsed", tc.args)
		}
		if got := flagvalue.ParseError(err).Error(); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
