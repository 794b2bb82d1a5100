package report

import (
	"math"
	"testing"
)

func TestUnits(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Sig3(0), "0"}, {Sig3(10), "10.0"}, {Sig3(0.25), "0.250"}, {Sig3(9.996), "10.0"}, {Sig3(-1.2345), "-1.23"},
		{Sig3(1234.5), "1234"}, {Sig3(1), "1.00"}, {Sig3(0.012345), "0.0123"}, {Sig3(123.4), "123"}, {Sig3(999.6), "1000"}, {Sig3(12345.6), "12346"}, {Sig3(math.NaN()), "NaN"},
		{Grouped(0), "0"}, {Grouped(999), "999"}, {Grouped(131072), "131,072"}, {Grouped(-5000), "-5000"},
		{NumGrouped(0.25), "0.25"}, {NumGrouped(12.5), "12.5"}, {NumGrouped(1024), "1,024"}, {NumGrouped(1234.6), "1,235"},
		{GiB(3 << 29), "1.5"}, {MiB(1 << 20), "1"},
		{Bytes(512), "512.0 B"}, {Bytes(3 << 29), "1.5 GiB"}, {Bytes(1 << 62), "4096.0 PiB"},
		{GB(141e9), "141 GB"}, {GB(1.88e9), "1.880 GB"}, {GB(34.4e9), "34.4 GB"}, {GB(2 << 40), "2199 GB (2.0 TiB)"},
		{Large(999999), "999999"}, {Large(4194304), "4.2 million"}, {Large(3e9), "3.0 billion"}, {Large(2e12), "2.0 trillion"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
