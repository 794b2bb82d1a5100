package flagvalue_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"moebench/internal/flagvalue"
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
