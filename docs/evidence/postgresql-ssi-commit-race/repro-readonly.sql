-- repro.sql with a C that only reads: Fekete, O'Neil and O'Neil's read-only
-- anomaly (see repro.sql for the syntax). C sees A's append to key 0 and
-- not B's append to key 1, although B read key 0 without A's append.
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
C: SELECT l FROM t WHERE k = 0;
B: COMMIT;
release A
wait A
C: SELECT l FROM t WHERE k = 1;
C: COMMIT;
final: SELECT k, l FROM t ORDER BY k;
