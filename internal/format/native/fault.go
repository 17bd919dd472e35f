package native

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// isFault reports whether the line is a fault record: a JSON object whose
// first field is "fault".
func isFault(line []byte) bool {
	s := scanner{b: line, op: -1}
	if s.ws() != '{' {
		return false
	}
	s.i++
	s.ws()
	return bytes.HasPrefix(s.b[s.i:], []byte(`"fault"`))
}

// faultLine is a fault record as JSON.
type faultLine struct {
	Fault json.RawMessage `json:"fault"`
	Node  json.RawMessage `json:"node"`
	Begin json.RawMessage `json:"begin"`
	End   json.RawMessage `json:"end"`
	Info  json.RawMessage `json:"info"`
	// Offset is a clock fault's skew, integer nanoseconds (signed).
	Offset json.RawMessage `json:"offset"`
}

// parseFault parses the fault record on line (number n of file): fault a
// non-empty string, begin an integer instant, end (optional: begin) an
// integer instant not before it, node and info optional strings, offset
// (a clock fault's skew) an optional integer number of nanoseconds. Other
// fields are ignored.
func parseFault(line []byte, file string, n int) (history.Fault, error) {
	bad := func(field, msg string) error { return &format.Error{File: file, Line: n, Field: field, Msg: msg} }
	var fl faultLine
	if err := json.Unmarshal(line, &fl); err != nil {
		return history.Fault{}, bad("fault", "malformed JSON: "+err.Error())
	}
	f := history.Fault{Line: n}
	str := func(field string, raw json.RawMessage, into *string, required bool) error {
		if raw == nil || string(raw) == "null" {
			if required {
				return bad(field, "missing")
			}
			return nil
		}
		if err := json.Unmarshal(raw, into); err != nil {
			return bad(field, "want a string, found "+string(raw))
		}
		if required && *into == "" {
			return bad(field, "empty: a fault record names its kind")
		}
		return nil
	}
	instant := func(field string, raw json.RawMessage) (int64, bool, error) {
		if raw == nil || string(raw) == "null" {
			return 0, false, nil
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || v < 0 {
			return 0, false, bad(field, "want an instant (non-negative integer nanoseconds), found "+string(raw))
		}
		return v, true, nil
	}
	if err := str("fault", fl.Fault, &f.Kind, true); err != nil {
		return f, err
	}
	if err := str("node", fl.Node, &f.Node, false); err != nil {
		return f, err
	}
	if err := str("info", fl.Info, &f.Info, false); err != nil {
		return f, err
	}
	var ok bool
	var err error
	if f.Begin, ok, err = instant("begin", fl.Begin); err != nil {
		return f, err
	} else if !ok {
		return f, bad("begin", "missing: a fault record says when it began")
	}
	if f.End, ok, err = instant("end", fl.End); err != nil {
		return f, err
	} else if !ok {
		f.End = f.Begin
	}
	if f.End < f.Begin {
		return f, bad("end", "end "+strconv.FormatInt(f.End, 10)+" is before begin "+strconv.FormatInt(f.Begin, 10))
	}
	if fl.Offset != nil && string(fl.Offset) != "null" {
		if f.Offset, err = strconv.ParseInt(string(fl.Offset), 10, 64); err != nil {
			return f, bad("offset", "want a clock offset (integer nanoseconds, negative behind), found "+string(fl.Offset))
		}
	}
	return f, nil
}

// appendFault appends f as one line.
func appendFault(b []byte, f *history.Fault) []byte {
	b = append(b, `{"fault":`...)
	b = appendJSONString(b, f.Kind)
	if f.Node != "" {
		b = append(b, `,"node":`...)
		b = appendJSONString(b, f.Node)
	}
	b = append(b, `,"begin":`...)
	b = strconv.AppendInt(b, f.Begin, 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, max(f.End, f.Begin), 10)
	if f.Offset != 0 {
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, f.Offset, 10)
	}
	if f.Info != "" {
		b = append(b, `,"info":`...)
		b = appendJSONString(b, f.Info)
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// WriteFault appends f as one line (a fault record) after the lines
// written so far.
func (sw *Writer) WriteFault(f *history.Fault) error {
	if f.Kind == "" || f.Begin < 0 || f.Begin == math.MaxInt64 {
		return errModel("a fault needs a kind and an instant")
	}
	sw.buf = appendFault(sw.buf, f)
	if len(sw.buf) >= flushAt {
		return sw.Flush()
	}
	return nil
}
