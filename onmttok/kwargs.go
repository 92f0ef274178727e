package onmttok

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseKwargs reads keyword arguments written as a Python dict literal,
// as OpenNMT-py's -src_onmttok_kwargs takes them ("{'mode': 'aggressive',
// 'joiner_annotate': True}"; OpenNMT-py evaluates the string), or as a
// JSON object. Values are strings, booleans, None, integers, floats and
// lists (or tuples) of them.
func ParseKwargs(s string) (map[string]any, error) {
	p := &literal{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errorf("unexpected %q after the dict", p.rest())
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a dict of keyword arguments, have %v", v)
	}
	return m, nil
}

type literal struct {
	s string
	i int
}

func (p *literal) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d of %q: %s", p.i, p.s, fmt.Sprintf(format, args...))
}

func (p *literal) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *literal) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *literal) value() (any, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict()
	case c == '[' || c == '(':
		return p.list(map[byte]byte{'[': ']', '(': ')'}[c])
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, w := range []struct {
		word string
		v    any
	}{{"True", true}, {"False", false}, {"None", nil}, {"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return w.v, nil
		}
	}
	return nil, p.errorf("unexpected %q (want a string, number, True, False, None, list or dict)", p.rest())
}

func (p *literal) dict() (any, error) {
	p.i++ // {
	m := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, p.errorf("dict key %v is not a string", k)
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("want ':' after key %q", key)
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[key] = v
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		return nil, p.errorf("want ',' or '}' in a dict")
	}
}

func (p *literal) list(end byte) (any, error) {
	p.i++
	l := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return l, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		l = append(l, v)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return l, nil
		}
		return nil, p.errorf("want ',' or %q in a list", end)
	}
}

func (p *literal) str() (any, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\\' && p.i+1 < len(p.s):
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'u', 'x', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if p.i+n > len(p.s) {
					return nil, p.errorf("short \\%c escape", e)
				}
				v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(v)) {
					return nil, p.errorf("bad \\%c escape %q", e, p.s[p.i:p.i+n])
				}
				b.WriteRune(rune(v))
				p.i += n
			default: // \\ \' \" and the others stand for themselves
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return nil, p.errorf("unterminated string")
}

func (p *literal) number() (any, error) {
	j := p.i
	for j < len(p.s) && strings.IndexByte("+-.0123456789eE_", p.s[j]) >= 0 {
		j++
	}
	t := strings.ReplaceAll(p.s[p.i:j], "_", "")
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		p.i = j
		return n, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return nil, p.errorf("bad number %q", p.s[p.i:j])
	}
	p.i = j
	return f, nil
}
