-- workload.sql - an SQLite workload for tests/e2e/mem_real.sh: a table of
-- 20000 rows inserted in one transaction, an index, grouped and ordered
-- queries, an update, a delete. Its output is the same at every run.
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);
CREATE INDEX t_grp ON t(grp);
BEGIN;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000)
INSERT INTO t(grp, name, val)
SELECT i % 97, 'name-' || (i * 7919 % 20000), (i * 37 % 1000) / 10.0 FROM c;
COMMIT;
SELECT count(*), sum(val) FROM t;
SELECT grp, count(*), round(avg(val), 3), min(name), max(name) FROM t GROUP BY grp ORDER BY grp LIMIT 12;
SELECT name, val FROM t ORDER BY val DESC, name LIMIT 10;
SELECT substr(name, 1, 6) AS p, count(*), group_concat(id, ',')
  FROM (SELECT * FROM t WHERE id % 1000 = 0 ORDER BY id) GROUP BY p ORDER BY p;
SELECT a.grp, count(*) FROM t AS a JOIN t AS b ON a.id = b.id + 1 AND a.grp = b.grp + 1
  GROUP BY a.grp ORDER BY count(*) DESC, a.grp LIMIT 5;
UPDATE t SET val = val * 2 WHERE grp < 10;
DELETE FROM t WHERE grp > 90;
SELECT count(*), round(sum(val), 2) FROM t;
