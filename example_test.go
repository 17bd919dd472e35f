package isoscope_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/isoscope/isoscope"
)

// A lost update: transactions 2 and 3 both read x=1 from transaction 1 and
// both overwrite it. Snapshot isolation forbids it.
func Example() {
	const text = `{"format":"isoscope-history","version":1,"initial":"absent","unique_values":true}
{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",1],["w","x",2]]}
{"id":3,"session":2,"ops":[["r","x",1],["w","x",3]]}
`
	h, err := isoscope.ReadHistory(strings.NewReader(text), "example.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: "si"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, res.Checker)
	for _, a := range res.Anomalies {
		fmt.Println(a.Kind, a.Phenomenon, a.Transactions)
		fmt.Println(a.Explanation)
	}
	// Output:
	// violation mt
	// lost-update G2-item [1 2 3]
	// T2 and T3 both read x from T1 and both overwrote it: one update is lost
}

// clientOrder is a module for a system whose clients saw transaction
// "a" finish before "b" started though their instants were not recorded:
// it adds that real-time edge.
type clientOrder struct{ first, then string }

func (clientOrder) Name() string { return "client-order" }

func (m clientOrder) Extend(a isoscope.ASG) error {
	h := a.History()
	var first, then isoscope.TxnID = -1, -1
	for i := range h.Txns {
		switch h.Txns[i].ID.String() {
		case m.first:
			first = isoscope.TxnID(i)
		case m.then:
			then = isoscope.TxnID(i)
		}
	}
	if first < 0 || then < 0 {
		return fmt.Errorf("no transactions %s and %s", m.first, m.then)
	}
	return a.Before(first, then, isoscope.RT, isoscope.NoKey)
}

// A module adds what the caller knows: here that "w" finished before "r"
// began, so r's read of the initial state is stale.
func ExampleModule() {
	const text = `{"format":"isoscope-history","version":1,"initial":"absent"}
{"id":"w","session":0,"ops":[["w","x",1]]}
{"id":"r","session":1,"ops":[["r","x",null]]}
`
	h, err := isoscope.ReadHistory(strings.NewReader(text), "example.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mods := range [][]isoscope.Module{nil, {clientOrder{"w", "r"}}} {
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: "ser", Modules: mods})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Outcome, res.Checker)
	}
	// Output:
	// satisfied sat
	// violation sat
}

// InnoDB's REPEATABLE READ lets two transactions read x from their
// snapshots and both UPDATE it — a lost update that snapshot isolation
// forbids and InnoDB documents. Checked against InnoDB's own promise
// (InnoDBRepeatableRead) it holds; the same through locking reads
// (SELECT … FOR UPDATE, the "lock" attribute), which InnoDB does not
// allow, is a violation.
func ExampleOptions_innoDBRepeatableRead() {
	const snapshot = `{"format":"isoscope-history","version":1,"initial":{"x":0}}
{"id":1,"session":0,"ops":[["r","x",0],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",0],["w","x",2]]}
`
	const locking = `{"format":"isoscope-history","version":1,"initial":{"x":0}}
{"id":1,"session":0,"ops":[["r","x",0,{"lock":true}],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",0,{"lock":true}],["w","x",2]]}
`
	for _, text := range []string{snapshot, locking} {
		h, err := isoscope.ReadHistory(strings.NewReader(text), "innodb.jsonl")
		if err != nil {
			fmt.Println(err)
			return
		}
		si, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: "si"})
		if err != nil {
			fmt.Println(err)
			return
		}
		innodb, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: "rr", InnoDBRepeatableRead: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("si:", si.Outcome, " innodb-rr:", innodb.Outcome)
	}
	// Output:
	// si: violation  innodb-rr: satisfied
	// si: violation  innodb-rr: violation
}
