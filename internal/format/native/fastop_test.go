package native

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestFastOp: operations that fastOp parses, and ones near them that it
// leaves to op, give the same history or the same error with and without
// it.
func TestFastOp(t *testing.T) {
	ops := []string{
		`["r",1,2]`, `["w",1,2]`, `["r",1,null]`, `["w",1,null]`, `["r",0,0]`, `["w",12,123456789012345678]`,
		`["w",1,1234567890123456789]`, `["w",1,12345678901234567890]`, `["w",1,99999999999999999999]`,
		`["r",1,-2]`, `["r",-1,2]`, `["r",01,2]`, `["r",1,02]`, `["r",1,2.5]`, `["r",1,2e3]`, `["r",1,2E3]`,
		`["r",1,nul]`, `["r",1,nulll]`, `["r",1,null ]`, `["r", 1,2]`, `["r",1 ,2]`, `["r",1,2 ]`, `[ "r",1,2]`,
		`["r",1,"x"]`, `["r","x",1]`, `["r",7,1]`, `["r",999999,1]`, `["r",1,[1,2]]`, `["r",1]`, `["r",1,]`,
		`["r",1,2,{"lock":true}]`, `["w",1,2,3]`, `["x",1,2]`, `["rr",1,2]`, `["d",1]`, `["r",1,2`, `["r",1,`,
		`["r",1`, `["r",`, `["r"`, `["w",3,true]`, `["r",1,2]]`, `["r",10,2]`, `["r",1,0]`, `["r",1,00]`,
	}
	for _, op := range ops {
		for _, prefix := range []string{"", `["w",3,4],`} {
			in := []byte(lines(
				`{"id":1,"session":0,"ops":[["w",1,1],["w",3,1],["w",10,1],["w",12,1]]}`,
				`{"id":2,"session":0,"ops":[`+prefix+op+`]}`,
				`{"id":3,"session":0,"ops":[`+op+`,["r",1,1]]}`))
			fastOps = true
			want, wantErr := Read(bytes.NewReader(in), "h.jsonl")
			fastOps = false
			got, err := Read(bytes.NewReader(in), "h.jsonl")
			fastOps = true
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Errorf("%s: error %v with fastOp, %v without", op, wantErr, err)
			} else if err == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the histories differ: %s", op, diff(got, want))
			}
			if err == nil && strings.Contains(op, "null") && got.Txns[1].Ops[len(got.Txns[1].Ops)-1].Value.Kind != 0 {
				t.Errorf("%s: not a null", op)
			}
		}
	}
}
