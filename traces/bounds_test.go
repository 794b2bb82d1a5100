package traces

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zeros is an endless stream of zero bytes, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// Each kind of trace input stops at its own bound, whatever the memory
// budget, and says so naming the input.
func TestReadBounds(t *testing.T) {
	t.Parallel()
	head := `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1}` + "\n"
	// A deflated member of 16 MiB of zeros whose entry declares 16 GiB.
	bomb := func(member []byte, declared uint64) *npz {
		var body bytes.Buffer
		fw, _ := flate.NewWriter(&body, flate.BestSpeed)
		fw.Write(member)
		fw.Write(make([]byte, 16<<20))
		fw.Close()
		var zb bytes.Buffer
		zw := zip.NewWriter(&zb)
		w, _ := zw.CreateRaw(&zip.FileHeader{Name: "topk_ids.npy", Method: zip.Deflate, CompressedSize64: uint64(body.Len()), UncompressedSize64: declared})
		w.Write(body.Bytes())
		zw.Close()
		z, err := openNPZ(bytes.NewReader(zb.Bytes()), int64(zb.Len()), "a.npz")
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	for _, c := range []struct {
		name string
		read func() error
		want string
	}{
		{"jsonl header line", func() error {
			_, err := NewJSONLReader(io.MultiReader(strings.NewReader(`{"format": "`), zeros{}), "t.jsonl")
			return err
		}, "t.jsonl:1: a line longer than 64 MiB, the most a trace's header line can be"},
		{"jsonl record line", func() error {
			r, err := NewJSONLReader(io.MultiReader(strings.NewReader(head+`{"step": 0, "x": "`), zeros{}), "t.jsonl")
			if err != nil {
				return err
			}
			_, err = r.Next()
			return err
		}, "t.jsonl:2: a line longer than 64 MiB, the most a JSON-lines trace record can be; larger records need the binary form"},
		{"npy array over the bound", func() error {
			_, err := readNPY(bytes.NewReader(npyBytes("<i8", []int{1 << 30}, nil)), -1, 0, "a.npy", "topk_ids")
			return err
		}, "a.npy: topk_ids: shape [1073741824] declares 8589934592 data bytes, more than 4 GiB, the most an array can be"},
		{"npz member declared over the bound", func() error {
			_, err := bomb(npyBytes("<i8", []int{1 << 30, 2}, nil), 16<<30).read("topk_ids")
			return err
		}, "a.npz: topk_ids: declares 17179869184 bytes inflated, more than an array's 4 GiB and its header"},
		{"npz member inflating past what it declares", func() error {
			_, err := bomb(npyBytes("<i8", []int{16}, nil), 1<<10).read("topk_ids")
			return err
		}, "a.npz: topk_ids: trailing data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.read()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestCountsCSVBound(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "w.csv")
	if err := os.WriteFile(p, []byte("1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<30); err != nil { // sparse
		t.Fatal(err)
	}
	for _, from := range []Format{FormatEPLB, FormatSGLangStatCSV} {
		_, err := Import([]string{p}, ImportOptions{From: from, TopK: 1})
		if err == nil || !strings.Contains(err.Error(), "w.csv: larger than 32 MiB") {
			t.Errorf("%s: %v, want the 32 MiB bound", from, err)
		}
	}
}
