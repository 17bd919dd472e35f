package native

import (
	"encoding/binary"
	"strconv"
	"testing"
)

func TestEightDigits(t *testing.T) {
	for _, s := range []string{"00000000", "12345678", "99999999", "10000001", "1234567a", "/2345678", ":2345678", "1234 678"} {
		v, ok := eightDigits(binary.LittleEndian.Uint64([]byte(s)))
		want, err := strconv.ParseUint(s, 10, 64)
		if ok != (err == nil) || ok && v != want {
			t.Errorf("eightDigits(%q) = %d, %v; want %d, %v", s, v, ok, want, err == nil)
		}
	}
}
