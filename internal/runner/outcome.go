package runner

import (
	"strings"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/txnend"
)

// ClassifyAbort sorts the error that ended a transaction, given as the
// database's classification of it (db.Database.Classify: a class and a
// reason that ends in the driver's error code in parentheses, such as
// "serialization failure (40001)" or "deadlock (1213)").
func ClassifyAbort(class db.ErrorClass, reason string) txnend.AbortClass {
	switch class {
	case db.Disconnected:
		return txnend.ConnectionLost
	case db.Interrupted:
		return txnend.Interrupted
	case db.Failed:
		return txnend.OtherAbort
	}
	code := reason
	if i := strings.LastIndexByte(reason, '('); i >= 0 && strings.HasSuffix(reason, ")") {
		code = reason[i+1 : len(reason)-1]
	}
	switch code {
	case "40001", "1020", "9007", "ErrConflict", "SQLITE_BUSY_SNAPSHOT":
		return txnend.SerializationFailure
	case "40P01", "1213":
		return txnend.Deadlock
	case "1205", "55P03", "SQLITE_BUSY", "SQLITE_LOCKED":
		return txnend.LockTimeout
	}
	return txnend.OtherAbort
}
