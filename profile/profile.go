package profile

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"moebench/internal/field"
	"moebench/internal/inputfile"
	"moebench/internal/report"
)

// Built-in profiles are folders of JSON parts (data/NAME/*.json), merged in
// name order, so that each part of the model keeps its constants in its own
// file.
//
//go:embed data
var builtin embed.FS

// Constant is one value of a profile with where it came from.
type Constant struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Kind   Kind    `json:"kind,omitempty"`
	Source string  `json:"source"`
	// From names the profile whose file set the constant: the profile
	// itself, or a base it inherits the constant from. Loading fills it
	// in; a file may state it, as a listing of a profile does.
	From string `json:"from,omitempty"`
}

// Profile is a set of constants for one platform. Profiles are values:
// Clone before changing one that others may hold.
type Profile struct {
	Name        string
	Description string
	// Base is the base profile the profile's own file names, if any.
	Base string
	// Origins lists what was merged to make this profile, in order: the
	// built-in names or files, then each --set override.
	Origins []string
	vals    map[string]Constant
	// measured is the raw local measurement a calibration fragment
	// carries (opaque here; the model's validation reads it), and
	// measuredFrom names the file.
	measured     json.RawMessage
	measuredFrom string
	// reads records the constants a model asked for (Get), shared by
	// every Clone, so that a command can tell a --set nothing read.
	reads *readSet
}

// readSet is the set of constant names read, safe for concurrent models.
type readSet struct {
	mu    sync.Mutex
	names map[string]bool
}

func (r *readSet) add(name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.names[name] = true
	r.mu.Unlock()
}

// Unread returns the names, in order, that no model has read with Get from
// this profile or any clone of it.
func (p *Profile) Unread(names []string) []string {
	var out []string
	if p.reads == nil {
		return slices.Clone(names)
	}
	p.reads.mu.Lock()
	defer p.reads.mu.Unlock()
	for _, n := range names {
		if !p.reads.names[n] {
			out = append(out, n)
		}
	}
	return out
}

// Measured returns the raw measurements carried by the last fragment that
// had any, and the fragment's name.
func (p *Profile) Measured() (json.RawMessage, string) { return p.measured, p.measuredFrom }

// Builtins lists the embedded profile names.
func Builtins() []string {
	ents, _ := builtin.ReadDir("data")
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// Load resolves a comma-separated list of profiles, each a built-in name or
// a file path; later entries override earlier ones constant by constant, so
// "p-ib,gpu-calibration.json" runs P-IB's NIC on locally measured GPU
// constants. A file may name a base profile that is loaded first. The result
// must define every constant of the schema.
func Load(spec string) (*Profile, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nameError{errors.New("profile: empty profile name")}
	}
	p := &Profile{vals: map[string]Constant{}, reads: &readSet{names: map[string]bool{}}}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if err := p.merge(part, nil); err != nil {
			return nil, err
		}
	}
	if missing := p.Missing(); len(missing) > 0 {
		return nil, fmt.Errorf("profile %s: missing constants %s (add them, or list a base profile first, e.g. p-ib,%s)",
			spec, strings.Join(missing, ", "), spec)
	}
	return p, nil
}

// MustLoad loads a built-in profile and panics on error; for tests and
// examples, whose built-in data is checked by the package's own tests.
func MustLoad(spec string) *Profile {
	p, err := Load(spec)
	if err != nil {
		panic(err)
	}
	return p
}

// maxBaseDepth bounds a chain of bases: a calibration fragment on a
// platform file on a built-in is three deep.
const maxBaseDepth = 4

// MaxFileBytes bounds a profile file: the largest built-in profile is about
// 40 KB of constants with their sources, and a calibration fragment adds
// its raw measurement, well under a megabyte; 16 MiB is far past both, and
// small enough to parse in a few hundred megabytes at worst.
const MaxFileBytes = 16 << 20

// ErrUnknownName is wrapped by Load's error when an entry of the spec
// itself names no built-in profile, a mistake in the spec rather than in
// a file (a file's unknown base is the file's fault).
var ErrUnknownName = errors.New("unknown profile name")

type nameError struct{ error }

func (nameError) Is(target error) bool { return target == ErrUnknownName }

// chainError says a chain of bases loops or runs too deep; it is reported
// once, not wrapped again by each file of the chain.
type chainError struct{ msg string }

func (e *chainError) Error() string { return e.msg }

// merge merges ref, named by the files in chain (outermost first) as
// their bases.
func (p *Profile) merge(ref string, chain []part) error {
	key := ref
	if !isBuiltinName(ref) {
		if abs, err := filepath.Abs(ref); err == nil {
			key = abs
		}
	}
	names := func() string {
		var s []string
		for _, c := range chain {
			s = append(s, c.label)
		}
		return strings.Join(append(s, filepath.Clean(ref)), " → ")
	}
	for _, c := range chain {
		if c.key == key {
			return &chainError{fmt.Sprintf("profile %s: its chain of bases loops: %s", chain[0].label, names())}
		}
	}
	if len(chain) > maxBaseDepth {
		return &chainError{fmt.Sprintf("profile %s: its chain of bases is deeper than %d: %s", chain[0].label, maxBaseDepth, names())}
	}
	parts, err := read(ref)
	if err != nil {
		if _, ok := err.(nameError); ok && len(chain) > 0 {
			err = errors.New(err.Error()) // a file's base: the file's fault
		}
		return err
	}
	for _, part := range parts {
		part.key = key
		if err := p.mergeFile(part, chain); err != nil {
			return err
		}
	}
	return nil
}

func (p *Profile) mergeFile(pt part, chain []part) error {
	label := pt.label
	f, err := Parse(label, pt.data)
	if err != nil {
		return err
	}
	if f.Base != "" {
		base := f.Base
		// A file's relative base is beside the file, wherever moebench
		// runs; a built-in name stays a name.
		if pt.dir != "" && !isBuiltinName(base) && !filepath.IsAbs(base) {
			base = filepath.Join(pt.dir, base)
		}
		if err := p.merge(base, append(slices.Clone(chain), pt)); err != nil {
			var ce *chainError
			if errors.As(err, &ce) {
				return err
			}
			return fmt.Errorf("%s: base %q: %w", label, f.Base, err)
		}
	}
	if p.Name == "" || len(chain) == 0 {
		p.Name = f.Name
		if f.Description != "" {
			p.Description = f.Description
		}
		if f.Base != "" {
			p.Base = f.Base
		}
	}
	p.Origins = append(p.Origins, label)
	if len(f.Measured) > 0 {
		p.measured, p.measuredFrom = f.Measured, label
	}
	for _, c := range f.Constants {
		if c.From == "" {
			c.From = f.Name
		}
		p.vals[c.Name] = c
	}
	return nil
}

type part struct {
	label string
	data  []byte
	dir   string // the folder of a file, "" for a built-in part
	key   string // what a loop of bases is told by: a name or an absolute path
}

// isBuiltinName tells a built-in profile's name from a file path.
func isBuiltinName(ref string) bool { return !strings.ContainsAny(ref, "/.\\") }

func read(ref string) ([]part, error) {
	if isBuiltinName(ref) {
		ents, err := builtin.ReadDir("data/" + ref)
		if err != nil || ref == "" {
			return nil, nameError{fmt.Errorf("profile %s: no such built-in profile (built-in: %s; or give a file path)",
				report.Quote(ref), strings.Join(Builtins(), ", "))}
		}
		var parts []part
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			data, err := builtin.ReadFile("data/" + ref + "/" + e.Name())
			if err != nil {
				return nil, fmt.Errorf("profile %s: %w", ref, err)
			}
			parts = append(parts, part{label: ref + "/" + e.Name(), data: data})
		}
		return parts, nil
	}
	data, err := inputfile.ReadFile(ref, "a profile file", MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return []part{{label: filepath.Clean(ref), data: data, dir: filepath.Dir(ref)}}, nil
}

// File is a profile file as written: possibly a fragment of the schema.
type File struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Base        string     `json:"base,omitempty"`
	Constants   []Constant `json:"constants"`
	// Measured, in a calibration fragment, is the raw measurement the
	// constants were fitted to, so that validate can put the model beside
	// it.
	Measured json.RawMessage `json:"measured,omitempty"`
}

// Parse decodes and checks a profile file. Errors name label, the line and
// the constant at fault.
func Parse(label string, data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	fail := func(off int64, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", label, lineAt(off), fmt.Sprintf(format, args...))
	}
	f := &File{}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fail(dec.InputOffset(), "want a JSON object")
	}
	seen := map[string]int{}
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(off, "%s", inputfile.JSONProblem(err))
		}
		key, _ := tok.(string)
		switch key {
		case "name":
			err = dec.Decode(&f.Name)
		case "description":
			err = dec.Decode(&f.Description)
		case "base":
			err = dec.Decode(&f.Base)
		case "measured":
			err = dec.Decode(&f.Measured)
		case "constants":
			if tok, err = dec.Token(); err != nil || tok != json.Delim('[') {
				return nil, fail(dec.InputOffset(), "field constants: want an array")
			}
			for dec.More() {
				coff := dec.InputOffset()
				var raw struct {
					Name   string   `json:"name"`
					Value  *float64 `json:"value"`
					Unit   string   `json:"unit"`
					Kind   string   `json:"kind"`
					Source string   `json:"source"`
					From   string   `json:"from"`
				}
				if err := dec.Decode(&raw); err != nil {
					return nil, fail(coff, "constants[%d]: %s", len(f.Constants), inputfile.JSONProblem(err))
				}
				start := int(coff)
				for start < len(data) && strings.ContainsRune(" \t\r\n,", rune(data[start])) {
					start++
				}
				line := lineAt(int64(start) + 1)
				if raw.Value == nil {
					return nil, fmt.Errorf("%s:%d: constant %s has no value", label, line, raw.Name)
				}
				c := Constant{Name: raw.Name, Value: *raw.Value, Unit: raw.Unit, Kind: Kind(raw.Kind), Source: raw.Source, From: raw.From}
				if err := check(c); err != nil {
					return nil, fmt.Errorf("%s:%d: %w", label, line, err)
				}
				if prev, dup := seen[c.Name]; dup {
					return nil, fmt.Errorf("%s:%d: constant %s set twice (first on line %d)", label, line, c.Name, prev)
				}
				seen[c.Name] = line
				f.Constants = append(f.Constants, c)
			}
			_, err = dec.Token()
		default:
			return nil, fail(off, "unknown field %q (want name, description, base, constants, measured)", key)
		}
		if err != nil {
			return nil, fail(off, "field %s: %s", key, inputfile.JSONProblem(err))
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(dec.InputOffset(), "%s", inputfile.JSONProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail(dec.InputOffset(), "trailing data after the profile object")
	}
	if f.Name == "" {
		return nil, fmt.Errorf("%s: field name is missing", label)
	}
	return f, nil
}

func check(c Constant) error {
	d, ok := Lookup(c.Name)
	if !ok {
		return unknown(c.Name)
	}
	if c.Unit != "" && c.Unit != d.Unit {
		return fmt.Errorf("constant %s: unit %q, want %q", c.Name, c.Unit, d.Unit)
	}
	if strings.TrimSpace(c.Source) == "" {
		return fmt.Errorf("constant %s: source is empty: every constant names the table, figure or measurement it came from", c.Name)
	}
	if c.Kind != "" {
		if _, err := parseKind(string(c.Kind)); err != nil {
			return fmt.Errorf("constant %s: %w", c.Name, err)
		}
	}
	return inRange(d, c.Value)
}

func unknown(name string) error {
	msg := fmt.Sprintf("unknown constant %q", name)
	if s := suggest(name); len(s) > 0 {
		msg += " (did you mean: " + strings.Join(s, ", ") + ")"
	} else {
		msg += " (moebench profile --list shows every constant)"
	}
	return errors.New(msg)
}

func inRange(d Def, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < d.Min || v > d.Max {
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
		return fmt.Errorf("constant %s = %s is out of range [%s, %s] %s", d.Name, f(v), f(d.Min), f(d.Max), d.Unit)
	}
	return nil
}

// Clone returns an independent copy.
func (p *Profile) Clone() *Profile {
	q := *p
	q.Origins = slices.Clone(p.Origins)
	q.measured = slices.Clone(p.measured)
	q.vals = maps.Clone(p.vals)
	return &q
}

// Set overrides one constant from text, as --set name=value does.
func (p *Profile) Set(name, value string) error {
	d, ok := Lookup(name)
	if !ok {
		return unknown(name)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil {
		return fmt.Errorf("constant %s: value %s is not a number", name, report.Quote(value))
	}
	if err := inRange(d, v); err != nil {
		return err
	}
	p.vals[name] = Constant{Name: name, Value: v, Unit: d.Unit, Kind: KindSet, Source: "command line", From: p.Name}
	p.Origins = append(p.Origins, fmt.Sprintf("--set %s=%v", name, v))
	return nil
}

// SetValue overrides one constant programmatically, for sweeps and tests
// that move one mechanism at a time.
func (p *Profile) SetValue(name string, v float64, source string) error {
	d, ok := Lookup(name)
	if !ok {
		return unknown(name)
	}
	if err := inRange(d, v); err != nil {
		return err
	}
	p.vals[name] = Constant{Name: name, Value: v, Unit: d.Unit, Source: source, From: p.Name}
	return nil
}

// ApplySets applies "name=value" overrides in order; errors name the
// offending entry.
func (p *Profile) ApplySets(sets []string) error {
	if _, err := SetNames(sets); err != nil {
		return err
	}
	for _, s := range sets {
		name, value, _ := strings.Cut(s, "=")
		if err := p.Set(strings.TrimSpace(name), value); err != nil {
			return field.Valuef("set", s, "%w", err)
		}
	}
	return nil
}

// SetNames returns the constant names of "name=value" overrides, refusing a
// malformed entry and a name given twice (the later would silently win).
func SetNames(sets []string) ([]string, error) {
	seen := map[string]string{}
	var names []string
	for _, s := range sets {
		name, _, ok := strings.Cut(s, "=")
		if !ok {
			return nil, field.Valuef("set", report.Quote(s), "want name=value")
		}
		name = strings.TrimSpace(name)
		if prev, dup := seen[name]; dup {
			return nil, field.Valuef("set", s, "%s is already set by %s; give each constant once", name, prev)
		}
		seen[name] = s
		names = append(names, name)
	}
	return names, nil
}

// Get returns a constant's value. Asking for an undeclared name is a bug in
// a model, so it panics; Load guarantees every declared constant is set.
func (p *Profile) Get(name string) float64 {
	p.reads.add(name)
	c, ok := p.vals[name]
	if !ok {
		if _, declared := Lookup(name); !declared {
			panic("profile: model reads undeclared constant " + name)
		}
		panic("profile: constant " + name + " not set in " + p.Name)
	}
	return c.Value
}

// Constant returns a constant with its source.
func (p *Profile) Constant(name string) (Constant, bool) {
	c, ok := p.vals[name]
	return c, ok
}

// InheritedFrom returns the base profile that set a constant, or "" where
// the profile sets it itself (its own file or the command line).
func (p *Profile) InheritedFrom(name string) string {
	if c, ok := p.vals[name]; ok && c.From != p.Name {
		return c.From
	}
	return ""
}

// Missing lists declared constants the profile does not set.
func (p *Profile) Missing() []string {
	var out []string
	for _, d := range Defs() {
		if _, ok := p.vals[d.Name]; !ok {
			out = append(out, d.Name)
		}
	}
	return out
}

// Constants returns every constant sorted by name.
func (p *Profile) Constants() []Constant {
	out := slices.Collect(maps.Values(p.vals))
	slices.SortFunc(out, func(a, b Constant) int { return strings.Compare(a.Name, b.Name) })
	return out
}
