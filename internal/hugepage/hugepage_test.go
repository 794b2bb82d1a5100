package hugepage

import "testing"

func TestMakeIsZeroedAndSized(t *testing.T) {
	for _, n := range []int{0, 1, 1000, Threshold/8 + 3, 3 * Threshold / 8} {
		for name, mk := range map[string]func(int) []int64{"Make": Make[int64], "MakeTouched": MakeTouched[int64]} {
			s := mk(n)
			if len(s) != n {
				t.Fatalf("%s(%d): length %d", name, n, len(s))
			}
			for i, v := range s {
				if v != 0 {
					t.Fatalf("%s(%d): [%d] = %d, want 0", name, n, i, v)
				}
			}
			for i := range s {
				s[i] = int64(i)
			}
			if n > 0 && s[n-1] != int64(n-1) {
				t.Fatalf("%s(%d): lost a write", name, n)
			}
		}
	}
}

func BenchmarkTouch64MiB(b *testing.B) {
	const n = 64 << 20
	for name, mk := range map[string]func(int) []byte{"make": func(n int) []byte { return make([]byte, n) }, "Make": Make[byte], "MakeTouched": MakeTouched[byte]} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(n)
			for b.Loop() {
				s := mk(n)
				for i := 0; i < n; i += 4096 {
					s[i] = 1
				}
			}
		})
	}
}
