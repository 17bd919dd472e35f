package cluster

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// TestCopyRewriting: addresses are rewritten even when a read splits
// them, and the bytes around them pass unchanged.
func TestCopyRewriting(t *testing.T) {
	rep := []replacement{{from: []byte("127.0.0.1:40321"), to: []byte("127.0.0.1:36319")}, {from: []byte("127.0.0.1:41111"), to: []byte("127.0.0.1:42222")}}
	in := []byte("\x00\x01tcp://127.0.0.1:40321\x00tcp://127.0.0.1:41111;127.0.0.1:4032;127.0.0.1:40321")
	want := []byte("\x00\x01tcp://127.0.0.1:36319\x00tcp://127.0.0.1:42222;127.0.0.1:4032;127.0.0.1:36319")
	var out bytes.Buffer
	if err := copyRewriting(&out, iotest.OneByteReader(bytes.NewReader(in)), rep); err != io.EOF {
		t.Fatalf("copy ended with %v, want EOF", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("got %q\nwant %q", out.Bytes(), want)
	}
}
