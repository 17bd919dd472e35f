package runner

import (
	"strings"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/outcome"
)

// ClassifyAbort sorts the error that ended a transaction, given as the
// database's classification of it (db.Database.Classify: a class and a
// reason that ends in the driver's error code in parentheses, such as
// "serialization failure (40001)" or "deadlock (1213)").
func ClassifyAbort(class db.ErrorClass, reason string) outcome.AbortClass {
	switch class {
	case db.Disconnected:
		return outcome.ConnectionLost
	case db.Interrupted:
		return outcome.Interrupted
	case db.Failed:
		return outcome.OtherAbort
	}
	code := reason
	if i := strings.LastIndexByte(reason, '('); i >= 0 && strings.HasSuffix(reason, ")") {
		code = reason[i+1 : len(reason)-1]
	}
	switch code {
	case "40001", "1020", "9007", "ErrConflict", "SQLITE_BUSY_SNAPSHOT":
		return outcome.SerializationFailure
	case "40P01", "1213":
		return outcome.Deadlock
	case "1205", "55P03", "SQLITE_BUSY", "SQLITE_LOCKED":
		return outcome.LockTimeout
	}
	return outcome.OtherAbort
}
