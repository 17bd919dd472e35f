package isoscope_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/isoscope/isoscope"
)

// A history built in Go: transactions 2 and 3 both read x=1 from
// transaction 1 and both overwrite it — a lost update, which snapshot
// isolation forbids.
func Example() {
	x := isoscope.Str("x")
	h, err := isoscope.NewHistory([]isoscope.Txn{
		{Session: isoscope.Int(1), Ops: []isoscope.Op{isoscope.R(x, isoscope.Null), isoscope.W(x, isoscope.Int(1))}},
		{Session: isoscope.Int(2), Ops: []isoscope.Op{isoscope.R(x, isoscope.Int(1)), isoscope.W(x, isoscope.Int(2))}},
		{Session: isoscope.Int(3), Ops: []isoscope.Op{isoscope.R(x, isoscope.Int(1)), isoscope.W(x, isoscope.Int(3))}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.SnapshotIsolation})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, "by", res.Checker)
	for _, a := range res.Anomalies {
		fmt.Println(a.Kind, a.Phenomenon, a.Txns)
		for _, e := range a.Cycle {
			fmt.Printf("  T%v --%s(%v)--> T%v\n", e.From, e.Dep, e.Key, e.To)
		}
		fmt.Println(a.Explanation)
	}
	// Output:
	// violation by mt
	// lost-update G2-item [1 2 3]
	//   T2 --rw(x)--> T3
	//   T3 --rw(x)--> T2
	// T2 and T3 both read x from T1 and both overwrote it: one update is lost
}

// An Elle list-append history in Jepsen's EDN, read through ReadHistory
// (which detects the format; a transaction is named by the index of its
// invocation): transactions 2 and 3 both read key 1 as [1] and both append
// to it, so neither saw the other's append — a lost update at snapshot
// isolation, while read committed holds.
func ExampleReadHistory() {
	const edn = `{:type :invoke, :process 0, :f :txn, :value [[:append 1 1]]}
{:type :ok, :process 0, :f :txn, :value [[:append 1 1]]}
{:type :invoke, :process 1, :f :txn, :value [[:r 1 nil] [:append 1 2]]}
{:type :invoke, :process 2, :f :txn, :value [[:r 1 nil] [:append 1 3]]}
{:type :ok, :process 1, :f :txn, :value [[:r 1 [1]] [:append 1 2]]}
{:type :ok, :process 2, :f :txn, :value [[:r 1 [1]] [:append 1 3]]}
`
	h, err := isoscope.ReadHistory(strings.NewReader(edn), "elle.edn")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range []isoscope.Level{isoscope.ReadCommitted, isoscope.SnapshotIsolation} {
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: l})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(l, res.Outcome, "by", res.Checker)
		for _, a := range res.Anomalies {
			fmt.Println(" ", a.Kind, a.Txns)
			fmt.Println(" ", a.Explanation)
		}
	}
	// Output:
	// read-committed satisfied by list-append
	// snapshot-isolation violation by list-append
	//   lost-update [2 3]
	//   T2 and T3 both read key 1 and both overwrote it: whichever wrote second had not seen the other's write, so one update is lost
}

// One small history of every format isoscope reads, each opened with its
// format detected and checked at serializability — or, for the Knossos
// and Porcupine register logs, at the strict serializability
// (linearizability) their format implies.
func ExampleOpenHistory() {
	entries, err := os.ReadDir("testdata/formats")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		h, err := isoscope.OpenHistory(context.Background(), filepath.Join("testdata/formats", e.Name()))
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-16s %2d transactions: %s %s (%s)\n", e.Name(), h.Len(), res.Level, res.Outcome, res.Checker)
	}
	// Output:
	// awdit.txt         5 transactions: serializable violation (sat)
	// cobra             7 transactions: serializable violation (mt)
	// dbcop.bincode     5 transactions: serializable satisfied (sat)
	// elle-rw.json      4 transactions: serializable violation (sat)
	// isoscope.jsonl    4 transactions: serializable satisfied (mt)
	// jepsen.edn        5 transactions: serializable satisfied (list-append)
	// knossos.log       4 transactions: strict-serializable satisfied (linear)
	// plume.txt         7 transactions: serializable violation (sat)
	// porcupine.txt    11 transactions: strict-serializable satisfied (linear)
	// timekiller.json   4 transactions: serializable satisfied (chronos)
	// viper             5 transactions: serializable satisfied (mt)
}

// clientOrder is a module for a system whose clients saw transaction
// "w" finish before "r" started, though their instants were not recorded:
// it adds that real-time edge.
type clientOrder struct{ first, then isoscope.Value }

func (clientOrder) Name() string { return "client-order" }

func (m clientOrder) Extend(g *isoscope.Graph) error {
	return g.Before(m.first, m.then, isoscope.RT, isoscope.Null)
}

// A module adds what the caller knows: here that "w" finished before "r"
// began, so r's read of the initial state is stale.
func ExampleModule() {
	x := isoscope.Str("x")
	h, err := isoscope.NewHistory([]isoscope.Txn{
		{ID: isoscope.Str("w"), Session: isoscope.Int(0), Ops: []isoscope.Op{isoscope.W(x, isoscope.Int(1))}},
		{ID: isoscope.Str("r"), Session: isoscope.Int(1), Ops: []isoscope.Op{isoscope.R(x, isoscope.Null)}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mods := range [][]isoscope.Module{nil, {clientOrder{isoscope.Str("w"), isoscope.Str("r")}}} {
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{Modules: mods})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Outcome, "by", res.Checker, res.Modules)
	}
	// Output:
	// satisfied by linear []
	// violation by sat [client-order]
}

// InnoDB's REPEATABLE READ lets two transactions read x from their
// snapshots and both UPDATE it — a lost update that snapshot isolation
// forbids and InnoDB documents. Checked against InnoDB's own promise
// (InnoDBRR) it holds; the same through locking reads (SELECT … FOR
// UPDATE, Op.Lock), which InnoDB does not allow, is a violation.
func ExampleOptions_innoDBRR() {
	x := isoscope.Str("x")
	for _, lock := range []bool{false, true} {
		read := isoscope.R(x, isoscope.Int(0))
		read.Lock = lock
		h, err := isoscope.NewHistory([]isoscope.Txn{
			{Session: isoscope.Int(0), Ops: []isoscope.Op{read, isoscope.W(x, isoscope.Int(1))}},
			{Session: isoscope.Int(1), Ops: []isoscope.Op{read, isoscope.W(x, isoscope.Int(2))}},
		}, isoscope.KV{Key: x, Value: isoscope.Int(0)})
		if err != nil {
			fmt.Println(err)
			return
		}
		si, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.SnapshotIsolation})
		if err != nil {
			fmt.Println(err)
			return
		}
		innodb, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.RepeatableRead, InnoDBRR: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("locking reads:", lock, " si:", si.Outcome, " innodb-rr:", innodb.Outcome)
	}
	// Output:
	// locking reads: false  si: violation  innodb-rr: satisfied
	// locking reads: true  si: violation  innodb-rr: violation
}
