package inputfile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, bytes.Repeat([]byte("x"), 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<40); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		limit      int64
		want       string // content, or the error's text
		tooLarge   bool
	}{
		{"small", small, 1 << 20, `{"a": 1}`, false},
		{"exactly the limit", exact, 1024, strings.Repeat("x", 1024), false},
		{"one over the limit", exact, 1023, "exact: larger than 1023 bytes, the most a test input can be", true},
		{"huge sparse file", huge, 16 << 20, "huge.json: larger than 16 MiB, the most a test input can be", true},
		{"endless device", "/dev/zero", 1 << 20, "/dev/zero: larger than 1 MiB, the most a test input can be", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, err := ReadFile(c.path, "a test input", c.limit)
			if IsTooLarge(err) != c.tooLarge {
				t.Fatalf("error %v, want too large %v", err, c.tooLarge)
			}
			if c.tooLarge {
				if !strings.HasSuffix(err.Error(), c.want) {
					t.Errorf("error %q, want it to end %q", err, c.want)
				}
				return
			}
			if err != nil || string(b) != c.want {
				t.Errorf("got %q, %v; want %q", b, err, c.want)
			}
		})
	}
	if _, err := ReadFile(filepath.Join(dir, "nope"), "a test input", 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

// A reader bounds what a zip member inflates to, whatever its directory
// entry declares.
func TestNewReaderStopsABomb(t *testing.T) {
	t.Parallel()
	var body bytes.Buffer
	fw, _ := flate.NewWriter(&body, flate.BestSpeed)
	fw.Write(make([]byte, 64<<20))
	fw.Close()
	var zb bytes.Buffer
	z := zip.NewWriter(&zb)
	// The entry declares 1 GiB; 64 MiB inflate; the reader stops at its
	// own bound whatever the entry says.
	w, _ := z.CreateRaw(&zip.FileHeader{Name: "m.npy", Method: zip.Deflate, CompressedSize64: uint64(body.Len()), UncompressedSize64: 1 << 30})
	w.Write(body.Bytes())
	z.Close()
	zr, err := zip.NewReader(bytes.NewReader(zb.Bytes()), int64(zb.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, NewReader(rc, "a.npz: m", "a member", 1<<20))
	if !IsTooLarge(err) || n != 1<<20 {
		t.Fatalf("read %d bytes, %v; want 1 MiB and too large", n, err)
	}
	if want := "a.npz: m: larger than 1 MiB, the most a member can be"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestNewReaderAtTheLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in       string
		limit    int64
		tooLarge bool
	}{{"", 0, false}, {"abc", 3, false}, {"abc", 2, true}, {"abc", 100, false}} {
		b, err := io.ReadAll(NewReader(strings.NewReader(c.in), "f", "x", c.limit))
		if IsTooLarge(err) != c.tooLarge || (!c.tooLarge && string(b) != c.in) {
			t.Errorf("%q with limit %d: %q, %v", c.in, c.limit, b, err)
		}
	}
}

func TestJSONError(t *testing.T) {
	t.Parallel()
	type doc struct {
		Header struct {
			Command string `json:"command"`
		} `json:"header"`
		Results []int          `json:"results"`
		Ratio   float64        `json:"ratio"`
		Map     map[string]int `json:"map"`
		OK      bool           `json:"ok"`
	}
	for _, c := range []struct{ name, in, want string }{
		{"string for a number", "{\n\"header\": {\"command\": 5}}", "r.json:2: field header.command: want a string, not a number"},
		{"object for an array", `{"results": {}}`, "r.json:1: field results: want an array, not an object"},
		{"fraction for a whole number", `{"results": [1.5]}`, "r.json:1: field results: want a whole number, not a number 1.5"},
		{"string for a float", `{"ratio": "x"}`, "r.json:1: field ratio: want a number, not a string"},
		{"array for a map", `{"map": []}`, "r.json:1: field map: want an object, not an array"},
		{"number for a bool", `{"ok": 1}`, "r.json:1: field ok: want true or false, not a number"},
		{"bool for a string", `{"header": {"command": true}}`, "r.json:1: field header.command: want a string, not true or false"},
		{"syntax", "{\n\n\"ok\": tru}", "r.json:3: not valid JSON: invalid character '}' in literal true (expecting 'e')"},
		{"cut short", `{"ok": `, "r.json:1: not valid JSON: unexpected end of JSON input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var d doc
			err := DecodeJSON("r.json", []byte(c.in), &d)
			if err == nil || err.Error() != c.want {
				t.Errorf("got %v\nwant %s", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "Go ") {
				t.Errorf("%v names Go types", err)
			}
		})
	}
	// Without a name, the position is a line; a decoder's cut-short input
	// is said in words.
	if got := JSONError("", []byte("{\n1"), &json.SyntaxError{Offset: 2}).Error(); !strings.HasPrefix(got, "line 2: not valid JSON") {
		t.Errorf("unnamed: %q", got)
	}
	if got := JSONError("m.json", nil, io.ErrUnexpectedEOF).Error(); got != "m.json: the JSON ends early (cut short?)" {
		t.Errorf("cut short: %q", got)
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{16 << 20: "16 MiB", 4 << 30: "4 GiB", 1023: "1023 bytes", 1<<20 + 1: "1048577 bytes", 3 << 10: "3 KiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
