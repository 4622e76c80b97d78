-- Spark's ANSI intervals: literals of every form, their arithmetic with dates, timestamps,
-- numbers and each other, their functions and aggregates; each compared with Spark in both modes.
SELECT INTERVAL '1-1' YEAR TO MONTH, INTERVAL -'1-1' YEAR TO MONTH, interval 2 month, interval 1 year 2 months, interval 2 years 25 months;
SELECT interval 5 days 3 hours, interval 5 hours 30 seconds 1 milliseconds 1 microseconds, INTERVAL '10' SECOND, INTERVAL '123 23:55:59.002001' DAY TO SECOND;
SELECT interval '1 day', interval '1 day 2 hours', interval '-1 day 2 hours', interval '1 day -2 hours', INTERVAL 3 HOURS, interval 2 weeks;
SELECT interval 1500 milliseconds, interval 100 minutes, interval -5 days, INTERVAL '100' HOUR, INTERVAL '-3' MINUTE, INTERVAL '0.000001' SECOND, INTERVAL 0 SECOND;
SELECT INTERVAL '10:20' MINUTE TO SECOND AS a, INTERVAL '1 10:20' DAY TO MINUTE AS b, INTERVAL '-10:20' HOUR TO MINUTE AS c, INTERVAL '3 4:5:6' DAY TO SECOND AS d, interval '2147483647 months' AS e;
SELECT TIMESTAMP'2024-03-31 00:30:00' + INTERVAL 1 DAY, TIMESTAMP'2024-01-31 10:00:00' + INTERVAL 1 MONTH, TIMESTAMP'2024-03-31 00:30:00' - INTERVAL '1 02:30' DAY TO MINUTE;
SELECT DATE'2024-01-31' + INTERVAL 1 MONTH, DATE'2024-01-31' + INTERVAL 1 DAY, DATE'2024-01-31' - INTERVAL 3 DAYS, DATE'2024-01-31' + INTERVAL 3 HOURS, DATE'2024-01-31' - INTERVAL '1 2' DAY TO HOUR;
SELECT d + INTERVAL 1 DAY AS a, d - INTERVAL '1' MONTH AS b, d + INTERVAL 30 MINUTES AS c FROM VALUES (DATE'2024-03-31'), (DATE'2024-02-29'), (NULL) AS t(d);
SELECT TIMESTAMP_NTZ'2024-01-31 10:00:00' + INTERVAL 1 DAY AS a, TIMESTAMP_NTZ'2024-01-31 10:00:00' - INTERVAL 2 MONTHS AS b;
SELECT TIMESTAMP'2024-03-31 00:30:00' - TIMESTAMP'2024-03-30 00:30:00' AS a, DATE'2024-03-31' - DATE'2024-03-01' AS b, DATE'2024-03-31' - DATE'2024-03-01' = INTERVAL 30 DAYS AS c;
SELECT interval 1 day * 2, interval 1 day * 2.5, interval 3 month * 1.5, interval 1 month / 3, interval 5 month / 3, interval 1 day / 3, 3 * interval 2 hours;
SELECT - interval 1 month AS a, - interval 1 day AS b, INTERVAL '1' YEAR + INTERVAL '1' MONTH AS c, INTERVAL 1 DAY + INTERVAL 1 HOUR AS d, INTERVAL 1 DAY - INTERVAL 90 MINUTES AS e;
SELECT INTERVAL '1' YEAR < INTERVAL '13' MONTH, INTERVAL '1' DAY = INTERVAL '24' HOUR, INTERVAL 1 DAY > INTERVAL 23 HOURS;
SELECT INTERVAL '1-1' YEAR TO MONTH div INTERVAL '-1' MONTH AS a, INTERVAL 1 DAY div INTERVAL 5 HOURS AS b;
SELECT try_add(interval 1 year, interval 2 year), try_subtract(interval 2 year, interval 1 year), try_multiply(interval 2 year, 3), try_divide(interval 2 month, 2), try_divide(interval 2 month, 0);
SELECT abs(INTERVAL -'1-1' YEAR TO MONTH) AS a, abs(interval -3 hours) AS b, sign(INTERVAL -'100' YEAR) AS c, signum(interval 0 seconds) AS d;
SELECT date_part('days', interval 5 days 3 hours 7 minutes) AS a, extract(seconds FROM interval 5 hours 30 seconds 1 milliseconds 1 microseconds) AS b, date_part('MONTH', INTERVAL '2021-11' YEAR TO MONTH) AS c, extract(YEAR FROM INTERVAL '2021-11' YEAR TO MONTH) AS d, extract(HOUR FROM INTERVAL '-1 10:20' DAY TO MINUTE) AS e;
SELECT CAST(INTERVAL '3' DAY AS STRING) AS a, CAST(INTERVAL '1-2' YEAR TO MONTH AS STRING) AS b, CAST(INTERVAL '3' DAY AS BIGINT) AS c, CAST(INTERVAL '25' MONTH AS INT) AS d, typeof(INTERVAL 1 DAY) AS e, typeof(interval 1 year 2 months) AS f;
SELECT sum(c), avg(c), min(c), max(c) FROM VALUES (INTERVAL 1 DAY), (INTERVAL 2 HOURS), (NULL) AS t(c);
SELECT k, sum(c), avg(c), median(c), percentile(c, 0.5) FROM VALUES (1, INTERVAL 1 MONTH), (1, INTERVAL 2 MONTH), (2, INTERVAL '1-6' YEAR TO MONTH), (2, INTERVAL 5 MONTHS), (2, INTERVAL 0 MONTH) AS t(k, c) GROUP BY k;
SELECT try_avg(col) FROM VALUES (interval '2147483647 months'), (interval '1 months') AS tab(col);
SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY col) AS a, percentile_disc(0.25) WITHIN GROUP (ORDER BY col) AS b FROM VALUES (INTERVAL '0' MONTH), (INTERVAL '10' MONTH) AS tab(col);
SELECT mode(col) AS m, percentile_approx(col, 0.5, 100) AS p FROM VALUES (INTERVAL '0' SECOND), (INTERVAL '10' SECOND), (INTERVAL '10' SECOND) AS tab(col);
SELECT sequence(to_date('2018-01-01'), to_date('2018-03-01'), interval '0-1' year to month) AS a, sequence(DATE'2018-01-01', DATE'2018-01-10', INTERVAL 4 DAYS) AS b;
SELECT make_interval(100, null, 3) AS a, try_make_interval(2147483647) AS b, make_ym_interval(1, 2) AS c, make_dt_interval(1, 12, 30, 1.001001) AS d;
SELECT k, c + INTERVAL 1 DAY AS next_day FROM VALUES (1, TIMESTAMP'2024-03-09 12:00:00'), (2, TIMESTAMP'2024-11-02 23:30:00') AS t(k, c) WHERE c > TIMESTAMP'2024-01-01 00:00:00' - INTERVAL 30 DAYS;
-- A difference of dates or timestamps cast to an integer: whole days, or whole seconds (cut
-- toward zero), an overflow failing in both modes
SELECT CAST(DATE'2024-01-05' - DATE'2024-01-01' AS INT) AS d, CAST(DATE'2024-01-01' - DATE'2024-01-05' AS BIGINT) AS e;
SELECT avg(CAST(b - a AS INT)) AS x, max(CAST(b - a AS INT)) AS m FROM VALUES (DATE'2024-01-01', DATE'2024-03-01'), (DATE'2024-01-01', DATE'2023-12-25') AS t(a, b);
SELECT CAST(x - y AS INT) AS d, CAST(x - y AS SMALLINT) AS s FROM VALUES (DATE'2024-01-05', DATE'2024-01-01'), (CAST(NULL AS DATE), DATE'2024-01-01') AS t(x, y);
SELECT CAST(DATE'2024-12-01' - DATE'2024-01-01' AS TINYINT) AS a;
SELECT try_cast(DATE'2024-12-01' - DATE'2024-01-01' AS TINYINT) AS a;
SELECT CAST(TIMESTAMP'2024-01-01 00:00:01.5' - TIMESTAMP'2024-01-01 00:00:00' AS INT) AS a, CAST(TIMESTAMP'2024-01-01 00:00:00' - TIMESTAMP'2024-01-01 00:00:01.5' AS INT) AS b;
SELECT CAST(TIMESTAMP'2100-01-01 00:00:00' - TIMESTAMP'1970-01-01 00:00:00' AS INT) AS a;
SELECT CAST(TIMESTAMP'2100-01-01 00:00:00' - TIMESTAMP'1970-01-01 00:00:00' AS BIGINT) AS a;
SELECT CAST(TIMESTAMP_NTZ'2024-01-02 00:00:00' - TIMESTAMP_NTZ'2024-01-01 00:00:00' AS INT) AS a;
SELECT make_dt_interval(2147483647) AS a;
SELECT make_dt_interval(1, 2) AS a, make_dt_interval(NULL) AS b;
SELECT INTERVAL '1' YEAR > INTERVAL '1' DAY AS a;
SELECT INTERVAL '1' YEAR = INTERVAL '12' MONTH AS a, INTERVAL '1' DAY < INTERVAL '25' HOUR AS b;
WITH t(y, d) AS (VALUES (INTERVAL '1' MONTH, INTERVAL '3' HOUR)) SELECT y = d AS a FROM t;
