-- repro.sql with plain UPDATEs instead of the upserts (see repro.sql for the syntax).
setup: DROP TABLE IF EXISTS t;
setup: CREATE TABLE t (k bigint PRIMARY KEY, l text);
setup: INSERT INTO t VALUES (0, '1'), (1, '2');
B: BEGIN ISOLATION LEVEL SERIALIZABLE;
B: SELECT l FROM t WHERE k = 0;
A: BEGIN ISOLATION LEVEL SERIALIZABLE;
A: UPDATE t SET l = l || ',10' WHERE k = 0;
B: UPDATE t SET l = l || ',20' WHERE k = 1;
hold A
A&: COMMIT;
held A
C: BEGIN ISOLATION LEVEL SERIALIZABLE;
C: UPDATE t SET l = l || ',30' WHERE k = 0;
B: COMMIT;
release A
wait A
C: SELECT l FROM t WHERE k = 1;
C: COMMIT;
final: SELECT k, l FROM t ORDER BY k;
