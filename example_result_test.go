package isoscope_test

import (
	"context"
	"fmt"
	"os"

	"github.com/isoscope/isoscope"
)

// WriteText renders a result as `isoscope check` prints it.
func ExampleResult_WriteText() {
	x := isoscope.Str("x")
	h, err := isoscope.NewHistory([]isoscope.Txn{
		{Session: isoscope.Int(1), Ops: []isoscope.Op{isoscope.W(x, isoscope.Int(1))}},
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
	if err := res.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// snapshot-isolation VIOLATED: 1 anomaly (checker sat; 3 transactions, 3 committed, 3 sessions, 5 operations; 0.00 ms)
	//
	// lost-update [G-single]: 1
	//   T2 --rw(x)--> T3 --ww(x)--> T2
	//     T2 and T3 both read x and both overwrote it: whichever wrote second had not seen the other's write, so one update is lost
	//     T2 --rw(x)--> T3: T2 read x=1 from T1, and T3 overwrote it with 3 (T3 read x=1, T1's, before writing it: a read-modify-write)
	//     T3 --ww(x)--> T2: T3 wrote x=3, and T2 overwrote it with 2 (both read the same version of x before writing it: in the other order of the two writes the other update is lost the same way)
}
