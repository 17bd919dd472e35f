package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestShardBadUsage: the sharded roles refuse bad flags before they
// connect anywhere, with exit 2 and what is wrong.
func TestShardBadUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(file, []byte(`{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLICases(t, []cliCase{
		{"shard kind", "", []string{"serve", "--nats", "nats://127.0.0.1:1", "--shard", "x:1"}, ExitBadInput, "", "want k:N (keys) or s:N (sessions)"},
		{"shard beyond", "", []string{"serve", "--nats", "nats://127.0.0.1:1", "--shard", "k:4", "--shards", "4"}, ExitBadInput, "", "numbered 0 to 3"},
		{"shard without nats", "", []string{"serve", "--shard", "k:0"}, ExitBadInput, "", "give --nats"},
		{"publish no file", "", []string{"publish", filepath.Join(t.TempDir(), "none.jsonl")}, ExitBadInput, "", "no such file"},
		{"publish no shards", "", []string{"publish", file, "--shards", "0"}, ExitBadInput, "", "0 shards: want 1 to 1024"},
		{"publish bad prefix", "", []string{"publish", file, "--prefix", "a..b"}, ExitBadInput, "", "subject prefix"},
		{"findings beyond loopback", "", []string{"findings", "--listen", "0.0.0.0:0", "--token", ""}, ExitBadInput, "", "needs a bearer token"},
	})
}
