package inputfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// DecodeJSON decodes data, the whole of the file name, into v and
// returns an error in plain words (see JSONError) when it cannot.
func DecodeJSON(name string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return JSONError(name, data, err)
	}
	return nil
}

// JSONError rewrites an error of encoding/json decoding data, the content
// of the file name, as "NAME:LINE: field a.b: want a number, not a string":
// the file, the line and the field at fault, with the JSON kinds in words,
// where Go's message names Go types and struct fields. With name "" it
// begins "line LINE:", for a caller that names the file itself.
func JSONError(name string, data []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	at := name
	if off >= 0 {
		line := 1 + bytes.Count(data[:max(0, min(int(off), len(data)))], []byte("\n"))
		if name == "" {
			at = fmt.Sprintf("line %d", line)
		} else {
			at = fmt.Sprintf("%s:%d", name, line)
		}
	}
	if at == "" {
		return errors.New(JSONProblem(err))
	}
	return fmt.Errorf("%s: %s", at, JSONProblem(err))
}

// JSONProblem words an error of encoding/json without its position: for
// JSON that is part of a file, where the file's line is not known.
func JSONProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return "not valid JSON: " + strings.TrimPrefix(syn.Error(), "json: ")
	case errors.As(err, &typ):
		where := ""
		if typ.Field != "" {
			where = "field " + typ.Field + ": "
		}
		return fmt.Sprintf("%swant %s, not %s", where, kindOf(typ.Type), article(typ.Value))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early (cut short?)"
	case errors.Is(err, io.EOF):
		return "empty, want a JSON object"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// kindOf names the JSON a Go type decodes from.
func kindOf(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// article puts "a" or "an" before the JSON kind encoding/json reports
// ("number", "string", "array", "object", "bool", or "number 1.5").
func article(v string) string {
	switch {
	case v == "bool":
		return "true or false"
	case v == "":
		return "this value"
	case strings.IndexByte("aeiou", v[0]) >= 0:
		return "an " + v
	}
	return "a " + v
}
