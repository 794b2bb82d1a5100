package profile

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteFragment writes f as a profile file with one constant per line,
// so that errors in a constant (Parse's) can name its line.
func WriteFragment(w io.Writer, f File) error {
	var b strings.Builder
	name, _ := json.Marshal(f.Name)
	desc, _ := json.Marshal(f.Description)
	fmt.Fprintf(&b, "{\n  \"name\": %s,\n  \"description\": %s,\n  \"constants\": [\n", name, desc)
	for i, c := range f.Constants {
		line, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("constant %s: %w", c.Name, err)
		}
		sep := ","
		if i == len(f.Constants)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "    %s%s\n", line, sep)
	}
	b.WriteString("  ]")
	if len(f.Measured) > 0 {
		fmt.Fprintf(&b, ",\n  \"measured\": %s", f.Measured)
	}
	b.WriteString("\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ForGPU is the built-in profile of the GPU named gpu (as its driver
// names it), p-ib (an H200) when none matches: a calibration's fit rests
// on the measured GPU's datasheet peaks.
func ForGPU(gpu string) string {
	g := strings.ToUpper(gpu)
	// GB200 before B200, which it contains.
	for _, m := range []struct{ name, profile string }{
		{"GB200", "p-gb200"}, {"B300", "p-b300"}, {"B200", "p-b200"}, {"H800", "p-h800"}, {"H100", "p-h100"}, {"H200", "p-ib"},
	} {
		if strings.Contains(g, m.name) {
			return m.profile
		}
	}
	return "p-ib"
}
