package gda

import (
	"strings"
	"testing"

	"moebench/internal/field"
	"moebench/profile"
)

func TestRateCheckFieldsNamesTheField(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib") // 132 SMs
	ok := RateConfig{Threads: 32, QPs: 1, SMs: 1, PerDoorbell: 1, Payload: 8, Inline: true, Depth: 1024}
	for _, tc := range []struct {
		name string
		edit func(*RateConfig)
		want string // the error's start, its field first; "" for none
	}{
		{"valid", func(*RateConfig) {}, ""},
		{"payload zero", func(c *RateConfig) { c.Payload = 0 }, "payload: 0 B"},
		{"payload negative", func(c *RateConfig) { c.Payload = -8 }, "payload: -8 B"},
		{"inline megabyte", func(c *RateConfig) { c.Payload = 1 << 20 }, "payload: 1048576 B inline"},
		{"inline past a WQE", func(c *RateConfig) { c.Payload = 1000 }, "payload: 1000 B inline makes a WQE of 17 basic blocks, more than the 16"},
		{"inline of the most segments", func(c *RateConfig) { c.Payload = 956 }, ""},
		{"inline past the ds count", func(c *RateConfig) { c.Payload = 960 }, "payload: 960 B inline makes a WQE of 64 segments"},
		{"pointer megabyte", func(c *RateConfig) { c.Payload, c.Inline = 1<<20, false }, ""},
		{"pointer past a message", func(c *RateConfig) { c.Payload, c.Inline = 1<<31, false }, "payload: 2147483648 B"},
		{"sms above the GPU", func(c *RateConfig) { c.SMs = 133 }, "sms: 133"},
		{"sms all of the GPU", func(c *RateConfig) { c.SMs = 132 }, ""},
		{"threads past the model", func(c *RateConfig) { c.Threads = 1<<20 + 1 }, "threads: 1048577"},
		{"qps past a NIC", func(c *RateConfig) { c.QPs = 1<<20 + 1 }, "qps: 1048577"},
		{"depth past a send queue", func(c *RateConfig) { c.Depth = 1<<15 + 1 }, "depth: 32769"},
		{"per doorbell zero", func(c *RateConfig) { c.PerDoorbell = 0 }, "per-doorbell: 0"},
	} {
		c := ok
		tc.edit(&c)
		err := c.CheckFields(p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q naming its field", tc.name, err, tc.want)
		case tc.want != "" && (len(field.Fields(err)) != 1 || !strings.HasPrefix(tc.want, field.Fields(err)[0].Field+":")):
			t.Errorf("%s: %v is not a field.Error of its field", tc.name, err)
		}
	}
}

func TestRateCostFollowsWhatRunsAtOnce(t *testing.T) {
	t.Parallel()
	small, _ := RateConfig{Threads: 1, QPs: 1, Depth: 1024}.Cost()
	deep, _ := RateConfig{Threads: 65536, QPs: 65536, Depth: 1024}.Cost()
	shallow, msgs := RateConfig{Threads: 65536, QPs: 1, Depth: 1024}.Cost()
	// Measured peaks: 19 MiB, 1.37 GiB and 155 MiB; the estimate stays
	// within a factor of two of each and above most.
	for _, tc := range []struct {
		name     string
		got, rss int64
	}{{"one thread", small, 19 << 20}, {"a QP each", deep, 1400 << 20}, {"one QP", shallow, 155 << 20}} {
		if tc.got < tc.rss*3/4 || tc.got > tc.rss*2 {
			t.Errorf("%s: estimate %d MiB, measured %d MiB", tc.name, tc.got>>20, tc.rss>>20)
		}
	}
	if msgs != 65536*64 {
		t.Errorf("messages %d, want 64 per thread", msgs)
	}
}
