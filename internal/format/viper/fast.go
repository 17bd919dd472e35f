package viper

import "github.com/isoscope/isoscope/internal/history"

// fastLine parses the line b as ViperBench's JsonLogger writes it,
// {"value": [mops]} perhaps followed by "isInitial" and "isFinal", with
// integer keys and values, into ps; it reports ok false for anything
// else (timestamps, string keys, spacing or field orders of its own,
// anything malformed), which the decoding path then reads and judges.
// Both give the same operations.
func fastLine(b []byte, ps []parsed) (_ []parsed, initial, ok bool) {
	f := fast{b: b}
	if !f.lit(`{`) || !f.lit(`"value"`) || !f.lit(`:`) || !f.lit(`[`) {
		return ps, false, false
	}
	if f.peek() == ']' {
		f.i++
	} else {
		for {
			p, ok := f.mop()
			if !ok {
				return ps, false, false
			}
			ps = append(ps, p)
			if f.peek() == ',' {
				f.i++
				continue
			}
			if !f.lit(`]`) {
				return ps, false, false
			}
			break
		}
	}
	if f.peek() == ',' {
		f.i++
		if !f.lit(`"isInitial"`) || !f.lit(`:`) {
			return ps, false, false
		}
		if initial, ok = f.boolean(); !ok || !f.lit(`,`) || !f.lit(`"isFinal"`) || !f.lit(`:`) {
			return ps, false, false
		}
		if _, ok := f.boolean(); !ok {
			return ps, false, false
		}
	}
	if !f.lit(`}`) || f.peek() != 0 || f.i != len(f.b) {
		return ps, false, false
	}
	return ps, initial, true
}

// fast is a cursor over a line.
type fast struct {
	b []byte
	i int
}

// peek returns the next byte that is not a space (0 at the end).
func (f *fast) peek() byte {
	for f.i < len(f.b) && (f.b[f.i] == ' ' || f.b[f.i] == '\t' || f.b[f.i] == '\r' || f.b[f.i] == '\n') {
		f.i++
	}
	if f.i >= len(f.b) {
		return 0
	}
	return f.b[f.i]
}

// lit consumes s after spaces.
func (f *fast) lit(s string) bool {
	f.peek()
	if len(f.b)-f.i < len(s) || string(f.b[f.i:f.i+len(s)]) != s {
		return false
	}
	f.i += len(s)
	return true
}

func (f *fast) boolean() (bool, bool) {
	if f.lit("true") {
		return true, true
	}
	return false, f.lit("false")
}

// int reads a JSON integer that fits 64 bits.
func (f *fast) int() (int64, bool) {
	f.peek()
	j := f.i
	neg := j < len(f.b) && f.b[j] == '-'
	if neg {
		j++
	}
	start := j
	var u uint64
	for j < len(f.b) && f.b[j] >= '0' && f.b[j] <= '9' {
		if j-start >= 19 {
			return 0, false // 20 digits or more: the decoding path judges
		}
		u = u*10 + uint64(f.b[j]-'0')
		j++
	}
	if j == start || j-start > 1 && f.b[start] == '0' || j < len(f.b) && (f.b[j] == '.' || f.b[j] == 'e' || f.b[j] == 'E') {
		return 0, false
	}
	// 19 digits fit a uint64; the int64 range is checked here.
	if neg && u > 1<<63 || !neg && u > 1<<63-1 {
		return 0, false
	}
	f.i = j
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

func (f *fast) intValue() (history.Value, bool) {
	n, ok := f.int()
	return history.IntValue(n), ok
}

// mop reads one operation.
func (f *fast) mop() (p parsed, ok bool) {
	if !f.lit(`[`) || !f.lit(`"`) {
		return p, false
	}
	j := f.i
	for j < len(f.b) && f.b[j] != '"' && f.b[j] != '\\' {
		j++
	}
	if j >= len(f.b) || f.b[j] != '"' {
		return p, false
	}
	p.name = string(f.b[f.i:j])
	f.i = j + 1
	if _, known := arity[p.name]; !known || !f.lit(`,`) {
		return p, false
	}
	if p.name == "range" {
		return f.rangeMop(p)
	}
	if p.key, ok = f.intValue(); !ok || !f.lit(`,`) {
		return p, false
	}
	if p.v, ok = f.intValue(); !ok {
		return p, false
	}
	switch p.name {
	case "r":
		p.n = 3
		if f.peek() == ',' {
			f.i++
			if _, ok := f.boolean(); !ok {
				return p, false
			}
			p.n = 4
		}
	case "w":
		p.n = 4
		if !f.lit(`,`) {
			return p, false
		}
		if p.succ, ok = f.boolean(); !ok {
			return p, false
		}
	default: // "i", "d" as ViperBench writes them: six elements
		p.n = 6
		if !f.lit(`,`) {
			return p, false
		}
		if p.readV, ok = f.intValue(); !ok || !f.lit(`,`) {
			return p, false
		}
		if _, ok = f.boolean(); !ok || !f.lit(`,`) {
			return p, false
		}
		if p.succ, ok = f.boolean(); !ok {
			return p, false
		}
	}
	return p, f.lit(`]`)
}

// rangeMop reads the rest of a range query: bounds, live and dead rows.
func (f *fast) rangeMop(p parsed) (parsed, bool) {
	p.n = 5
	for b := range 2 {
		if f.lit(`"nil"`) {
			p.open[b] = true
		} else {
			v, ok := f.intValue()
			if !ok {
				return p, false
			}
			p.bound[b] = v
		}
		if !f.lit(`,`) {
			return p, false
		}
	}
	for part := range 2 {
		if !f.lit(`[`) {
			return p, false
		}
		if f.peek() == ']' {
			f.i++
		} else {
			for pos := 0; ; pos++ {
				// {"id": k, "sk": k, "val": v}
				if !f.lit(`{`) || !f.lit(`"id"`) || !f.lit(`:`) {
					return p, false
				}
				id, ok := f.intValue()
				if !ok || !f.lit(`,`) || !f.lit(`"sk"`) || !f.lit(`:`) {
					return p, false
				}
				if _, ok := f.int(); !ok || !f.lit(`,`) || !f.lit(`"val"`) || !f.lit(`:`) {
					return p, false
				}
				val, ok := f.intValue()
				if !ok || !f.lit(`}`) {
					return p, false
				}
				p.rows = append(p.rows, prow{part: part, pos: pos, id: id, val: val})
				if f.peek() == ',' {
					f.i++
					continue
				}
				if !f.lit(`]`) {
					return p, false
				}
				break
			}
		}
		if part == 0 && !f.lit(`,`) {
			return p, false
		}
	}
	if f.peek() == ',' {
		f.i++
		if _, ok := f.boolean(); !ok {
			return p, false
		}
		p.n = 6
	}
	return p, f.lit(`]`)
}
