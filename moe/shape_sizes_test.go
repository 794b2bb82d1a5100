package moe_test

import (
	"strings"
	"testing"

	"moebench/moe"
)

func TestSizesFitAMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(*moe.Shape)
		mode  moe.Mode
		chunk int
		want  string // the error's start; "" for none
	}{
		{"v3", func(*moe.Shape) {}, moe.LL, 0, ""},
		{"hidden past a message", func(s *moe.Shape) { s.Hidden = 1 << 31 }, moe.LL, 0, "hidden: 2147483648 channels make a token of more than"},
		{"hidden wraps 32 bits", func(s *moe.Shape) { s.Hidden = 1 << 32 }, moe.LL, 0, "hidden: 4294967296"},
		{"bf16 combine past a message", func(s *moe.Shape) { s.Hidden = 1 << 30 }, moe.LL, 0, "hidden: 1073741824"},
		{"largest hidden in ll", func(s *moe.Shape) { s.Hidden = 1 << 28 }, moe.LL, 0, ""},
		{"default chunk past a message", func(s *moe.Shape) { s.Hidden = 1 << 28 }, moe.Normal, 0, "hidden: 268435456 channels make the default chunks of"},
		{"small chunk of a large token", func(s *moe.Shape) { s.Hidden = 1 << 28 }, moe.Normal, 7, ""},
		{"chunk past a message", func(*moe.Shape) {}, moe.Normal, 1 << 31, "chunk: 2147483648 tokens of 7504 B"},
		{"largest chunk", func(*moe.Shape) {}, moe.Normal, (1<<31 - 1) / 7504, ""},
		{"chunk in ll is not a write", func(*moe.Shape) {}, moe.LL, 1 << 40, ""},
	} {
		s := v3()
		tc.edit(&s)
		err := s.Validate()
		if err == nil {
			err = s.CheckWrites(tc.mode, tc.chunk)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q...", tc.name, err, tc.want)
		}
	}
}

func TestBackgroundWriteFitsAMessage(t *testing.T) {
	t.Parallel()
	if err := (moe.Background{CTAs: 1, Bytes: 1<<31 - 1}).Validate(); err != nil {
		t.Errorf("the largest message: %v", err)
	}
	if err := (moe.Background{CTAs: 1, Bytes: 1 << 31}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "bytes: 2147483648 per write") {
		t.Errorf("2^31 B writes: %v", err)
	}
}
