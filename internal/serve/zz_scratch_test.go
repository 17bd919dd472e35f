package serve_test

import (
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/serve"
)

func TestScratchFault(t *testing.T) {
	in := `{"id":1,"session":0,"begin":10,"end":20,"start_ts":1,"commit_ts":2,"ops":[["w",1,1]]}
{"fault":"kill","node":"n1","begin":15,"end":25}
{"id":2,"session":0,"begin":30,"end":40,"start_ts":3,"commit_ts":4,"ops":[["r",1,1]]}
`
	h, txns, err := serve.ParseBatch(strings.NewReader(in), "b")
	t.Logf("%v %d %v", h, len(txns), err)
	in2 := `{"fault":"kill","node":"n1","begin":15,"end":25}
`
	h, txns, err = serve.ParseBatch(strings.NewReader(in2), "b")
	t.Logf("%v %d %v", h, len(txns), err)
}
