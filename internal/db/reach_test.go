package db

import (
	"context"
	"net"
	"strings"
	"testing"
)

// TestUnreachableSaysItOnce: a PostgreSQL that does not listen is named
// once per address in the error, not once per attempt of the driver (TLS,
// then plain).
func TestUnreachableSaysItOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a port nothing listens on
	_, err = Open(context.Background(), "postgres://postgres@"+addr+"/test", "")
	if err == nil {
		t.Fatal("opened a database nobody serves")
	}
	if n := strings.Count(err.Error(), "connection refused"); n != 1 {
		t.Errorf("the refusal is said %d times:\n%v", n, err)
	}
}
