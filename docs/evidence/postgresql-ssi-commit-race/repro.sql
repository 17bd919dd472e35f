-- The schedule repro.sh runs: three SERIALIZABLE sessions A, B and C.
-- "X: SQL" runs SQL in session X and waits for its answer; "X&: SQL" sends
-- it without waiting; "hold X" attaches gdb (repro.gdb) to X's backend,
-- "held X" waits until that backend is stopped in ReleasePredicateLocks,
-- "release X" lets it go on, "wait X" waits for X's pending answer.
-- Without gdb (repro.sh --no-gdb), hold/held/release do nothing and "X&"
-- waits like "X".  Each list is a comma-separated text; an "append" adds
-- an element to a key's list (an upsert, as isoscope's list-append does).
setup: DROP TABLE IF EXISTS t;
setup: CREATE TABLE t (k bigint PRIMARY KEY, l text);
setup: INSERT INTO t VALUES (0, '1'), (1, '2');
B: BEGIN ISOLATION LEVEL SERIALIZABLE;
B: SELECT l FROM t WHERE k = 0;
A: BEGIN ISOLATION LEVEL SERIALIZABLE;
A: INSERT INTO t (k, l) VALUES (0, '10') ON CONFLICT (k) DO UPDATE SET l = COALESCE(t.l || ',', '') || EXCLUDED.l;
B: INSERT INTO t (k, l) VALUES (1, '20') ON CONFLICT (k) DO UPDATE SET l = COALESCE(t.l || ',', '') || EXCLUDED.l;
hold A
A&: COMMIT;
held A
C: BEGIN ISOLATION LEVEL SERIALIZABLE;
C: INSERT INTO t (k, l) VALUES (0, '30') ON CONFLICT (k) DO UPDATE SET l = COALESCE(t.l || ',', '') || EXCLUDED.l;
B: COMMIT;
release A
wait A
C: SELECT l FROM t WHERE k = 1;
C: COMMIT;
final: SELECT k, l FROM t ORDER BY k;
