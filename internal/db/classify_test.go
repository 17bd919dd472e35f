package db

import (
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestClassifyMySQL sorts the MySQL-protocol errors the clusters answer
// with: TiDB's write conflict (9007) and Dolt's serialization failure
// (1213, as InnoDB's deadlock) at COMMIT are aborts, a Galera node's
// 1180 at COMMIT leaves the outcome unknown, and an error the server
// does not name as either is a failure.
func TestClassifyMySQL(t *testing.T) {
	for _, tc := range []struct {
		num  uint16
		msg  string
		want ErrorClass
	}{
		{9007, "Write conflict, txnStartTS=1, conflictStartTS=2, conflictCommitTS=3, key={tableID=1, handle=1}, reason=Optimistic [try again later]", Aborted},
		{1213, "serialization failure: this transaction conflicts with a committed transaction from another client, try restarting transaction", Aborted},
		{1205, "Lock wait timeout exceeded; try restarting transaction", Aborted},
		{1180, "Got error 6 \"No such device or address\" during COMMIT", Disconnected},
		{8048, "The isolation level 'SERIALIZABLE' is not supported. Set tidb_skip_isolation_level_check=1 to skip this error", Failed},
	} {
		err := fmt.Errorf("commit: %w", &mysql.MySQLError{Number: tc.num, Message: tc.msg})
		got, why, ok := classifyMySQL(err)
		if !ok || got != tc.want {
			t.Errorf("%d: got %s (%q, %v), want %s", tc.num, got, why, ok, tc.want)
		}
	}
}
