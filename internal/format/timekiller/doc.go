// Package timekiller reads the JSON histories of TimeKiller, the tool
// behind Chronos and Aion (Li, Wei et al., "Online Timestamp-based
// Transactional Isolation Checking of Database Systems";
// github.com/FertileFragrance/TimeKiller), into isoscope's history model.
//
// # Format
//
// One JSON array of transactions, each an object:
//
//	{"tid": 67, "sid": 19,
//	 "sts": {"p": 1691420095436341, "l": 61},
//	 "cts": {"p": 1691420095659914, "l": 18},
//	 "ops": [{"t": "w", "k": 7, "v": 2}, {"t": "r", "k": 8, "v": 3}]}
//
// tid (the transaction) and sid (its session) are integers or strings;
// sts and cts are the start and commit timestamps, hybrid logical clocks
// of a physical part p and a logical part l, ordered by p and then l,
// with cts not below sts. TimeKiller reads every integer as a Java long,
// and accepts one written as a JSON string ("p": "320316486"); so does
// this reader. An operation's t is its type, case-insensitive: in a
// key-value history "w"/"write" and "r"/"read", v an integer (a read's v
// may be null or left out: the key was absent); in a list history
// "a"/"append" with an integer v, and "r"/"read" whose v is the whole
// list, an array of integers (null, [] or left out: empty). k is an
// integer. Every transaction of the file committed: TimeKiller's
// histories have no aborted transactions. Transactions appear in session
// order.
//
// # Modelling
//
// tid and sid become the transaction's id and session label as they are
// written (an integer, or a string). Each transaction is committed, with
// start_ts and commit_ts, in file order. A history is a list history when
// any operation appends or any read returns an array, and a key-value
// history otherwise; a write in a list history is bad input.
//
// Timestamps: every hybrid logical clock (p, l) becomes the unsigned
// integer p·2^B + l, where B is the number of bits of the largest logical
// part in the file (0 when every l is 0, as in TiDB's timestamps, which
// then stay as they are). The map keeps the clocks' order exactly; a
// clock whose physical part needs more than 64−B bits cannot be
// represented, and is bad input naming it.
//
// The initial state is not in the file: TimeKiller takes it from its
// --initial_value flag (default null). A key-value history starts with
// every key absent, except when it reads 0 from a key that no
// transaction writes 0 to and no read returns null: then it starts with 0
// at every key of the file (TimeKiller's --initial_value 0, which its own
// example histories need). Lists start empty. The header claims nothing
// about unique values and names the file and the timestamp map as the
// source.
//
// Malformed JSON, a missing or mistyped field, a negative or fractional
// clock part, a start after the commit, an unknown operation, a
// transaction without operations (isoscope's format allows none), a
// duplicate tid, or a clock that does not fit is a *format.Error naming the line
// where the transaction starts and the field, as "[12].ops[3].v".
package timekiller
