// Package flagvalue holds pflag value types and list handling that are
// not any one command's: a flag that takes one value of what another
// command takes a list of, and comma lists split into their items.
package flagvalue

import (
	"strconv"
	"strings"
)

// First is v's first value, T's zero when v is empty: the value of a
// flag that takes one, held as a list.
func First[T any](v []T) (x T) {
	if len(v) > 0 {
		x = v[0]
	}
	return x
}

// Int is an int flag held as a list of one, for a command that takes one
// value of what others sweep; it parses, shows its type and its zero
// default as pflag's IntVar does.
type Int struct{ V *[]int }

func (o *Int) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return err
	}
	*o.V = []int{int(v)}
	return nil
}

func (o *Int) String() string { return strconv.Itoa(First(*o.V)) }
func (o *Int) Type() string   { return "int" }

// String is Int's string counterpart, with pflag's StringVar's look.
type String struct{ V *[]string }

func (o *String) Set(s string) error { *o.V = []string{s}; return nil }
func (o *String) String() string     { return First(*o.V) }
func (o *String) Type() string       { return "string" }

// Split splits comma-separated values into their items, trimmed, the
// empty ones dropped: "a, b,,c" and "a" "b,c" alike give a, b, c.
func Split(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
