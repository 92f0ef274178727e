package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// errPickleEnds marks a scan that ran out of bytes: the pickle is truncated,
// or (for the legacy format, read in growing windows) the window is too
// short.
var errPickleEnds = errors.New("pickle ends early")

// scanPickle walks the opcodes of a pickle up to STOP without executing
// them and checks that every length argument fits in the bytes that remain.
// gopickle allocates a buffer of the declared length before reading, so a
// hostile length of, say, 2^40 would otherwise exhaust memory before any
// error could be returned. It returns the length of the pickle, STOP
// included: the legacy format writes several pickles back to back.
func scanPickle(p []byte) (int, error) {
	i := 0
	need := func(n uint64, what string, op byte, at int) error {
		if n > uint64(len(p)-i) {
			return fmt.Errorf("pickle: opcode 0x%02x at byte %d: %s of %d bytes runs past the end of the %d-byte pickle%w", op, at, what, n, len(p), quiet{errPickleEnds})
		}
		return nil
	}
	for i < len(p) {
		op := p[i]
		at := i
		i++
		var fixed int   // fixed-size argument
		var lenSize int // size of a length prefix, then that many bytes
		lines := 0      // newline-terminated arguments
		switch op {
		case '(', '.', '0', '1', '2', 'N', 'Q', 'R', 'a', 'b', 'd', '}', 'e', 'l', ']', 'o', 's', 't', ')', 'u',
			0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94, 0x97, 0x98:
		case 'F', 'I', 'L', 'P', 'S', 'V', 'g', 'p':
			lines = 1
		case 'c', 'i':
			lines = 2
		case 'K', 'h', 'q', 0x80, 0x82: // single-byte args
			fixed = 1
		case 'M', 0x83:
			fixed = 2
		case 'J', 'j', 'r', 0x84:
			fixed = 4
		case 'G':
			fixed = 8
		case 'U', 'C', 0x8a, 0x8c:
			lenSize = 1
		case 'T', 'X', 'B', 0x8b:
			lenSize = 4
		case 0x8d, 0x8e, 0x96, 0x95:
			lenSize = 8
		default:
			return 0, fmt.Errorf("pickle: unknown opcode 0x%02x at byte %d", op, at)
		}
		if err := need(uint64(fixed), "argument", op, at); err != nil {
			return 0, err
		}
		i += fixed
		for ; lines > 0; lines-- {
			nl := bytes.IndexByte(p[i:], '\n')
			if nl < 0 {
				return 0, fmt.Errorf("pickle: opcode 0x%02x at byte %d: argument line has no end%w", op, at, quiet{errPickleEnds})
			}
			i += nl + 1
		}
		if lenSize > 0 {
			if err := need(uint64(lenSize), "length", op, at); err != nil {
				return 0, err
			}
			var n uint64
			switch lenSize {
			case 1:
				n = uint64(p[i])
			case 4:
				n = uint64(binary.LittleEndian.Uint32(p[i:]))
			case 8:
				n = binary.LittleEndian.Uint64(p[i:])
			}
			i += lenSize
			if err := need(n, "argument", op, at); err != nil {
				return 0, err
			}
			if op == 0x95 { // FRAME: the frame's opcodes follow inline
				continue
			}
			i += int(n)
		}
		if op == '.' {
			return i, nil
		}
	}
	return 0, fmt.Errorf("pickle: ends without a STOP opcode (truncated?)%w", quiet{errPickleEnds})
}

// quiet wraps a sentinel error so that errors.Is finds it while %w adds
// nothing to the message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }
