-- Dates and timestamps (session zone UTC): arithmetic, truncation, extraction, formatting,
-- intervals, and instants across daylight-saving changes elsewhere.

SELECT date_add(DATE'2024-02-28', 1) AS a, date_sub(DATE'2024-03-01', 1) AS b, DATE'2024-01-31' + 1 AS c;
SELECT datediff(DATE'2024-03-01', DATE'2024-02-01') AS d, months_between(DATE'2024-03-31', DATE'2024-02-29') AS m;
SELECT add_months(DATE'2024-01-31', 1) AS a, last_day(DATE'2024-02-10') AS b, next_day(DATE'2024-01-01', 'MON') AS c;
SELECT year(d) AS y, month(d) AS m, day(d) AS dd, dayofweek(d) AS dow, dayofyear(d) AS doy, weekofyear(d) AS w, quarter(d) AS q FROM VALUES (DATE'2024-12-30') AS t(d);
SELECT hour(t) AS h, minute(t) AS m, second(t) AS s FROM VALUES (TIMESTAMP'2024-01-02 03:04:05.678') AS x(t);
SELECT date_trunc('MONTH', TIMESTAMP'2024-05-17 10:11:12') AS m, date_trunc('HOUR', TIMESTAMP'2024-05-17 10:11:12') AS h;
-- A TIMESTAMP_NTZ is read as a TIMESTAMP: the answer is one.
SELECT date_trunc('MICROSECOND', TIMESTAMP_NTZ '2015-03-05 09:32:05.123456789') AS a, date_trunc('HOUR', TIMESTAMP_NTZ '2015-03-05 09:32:05') AS b, typeof(date_trunc('DAY', TIMESTAMP_NTZ '2015-03-05 09:32:05')) AS c;
SELECT to_utc_timestamp(TIMESTAMP_NTZ '2020-03-05 10:00:00', 'Europe/Berlin') AS a, from_utc_timestamp(TIMESTAMP_NTZ '2020-03-05 10:00:00', 'Asia/Seoul') AS b, to_utc_timestamp(TIMESTAMP_NTZ '2021-03-28 02:30:00', 'Europe/Berlin') AS c;
-- A DATE given for the timestamp: Spark reads it as one; refused natively.
SELECT date_trunc('MONTH', DATE'2024-05-17') AS a;
SELECT trunc(DATE'2024-05-17', 'MM') AS m, trunc(DATE'2024-05-17', 'YEAR') AS y;
SELECT date_format(TIMESTAMP'2024-05-17 10:11:12', 'yyyy-MM-dd HH:mm') AS f, date_format(DATE'2024-05-07', 'EEE, d MMM yyyy') AS g;
SELECT to_date('17/05/2024', 'dd/MM/yyyy') AS d, to_timestamp('2024-05-17 10:11', 'yyyy-MM-dd HH:mm') AS t;
SELECT unix_timestamp(TIMESTAMP'2024-01-01 00:00:00') AS u, from_unixtime(0) AS f;
SELECT timestamp_seconds(1700000000) AS t, unix_seconds(TIMESTAMP'2023-11-14 22:13:20') AS s;
SELECT from_utc_timestamp(TIMESTAMP'2024-03-10 06:30:00', 'America/New_York') AS before_dst, from_utc_timestamp(TIMESTAMP'2024-03-10 07:30:00', 'America/New_York') AS after_dst;
SELECT to_utc_timestamp(TIMESTAMP'2024-10-27 00:30:00', 'Europe/Oslo') AS a, to_utc_timestamp(TIMESTAMP'2024-10-27 03:30:00', 'Europe/Oslo') AS b;
SELECT from_utc_timestamp(TIMESTAMP'2024-11-03 05:30:00', 'America/Chicago') AS a, from_utc_timestamp(TIMESTAMP'2024-11-03 06:30:00', 'America/Chicago') AS b;
SELECT TIMESTAMP'2024-03-31 00:30:00' + INTERVAL 1 DAY AS a, TIMESTAMP'2024-03-31 00:30:00' + INTERVAL 3 HOURS AS b;
SELECT DATE'2024-01-31' + INTERVAL 1 MONTH AS a, DATE'2024-02-29' - INTERVAL 1 YEAR AS b;
SELECT TIMESTAMP'2024-01-01 10:00:00' - TIMESTAMP'2024-01-01 08:30:00' AS d;
SELECT d FROM VALUES (DATE'2024-01-01'), (DATE'2024-02-01'), (DATE'2024-03-01') AS t(d) WHERE d >= '2024-02-01';
SELECT t FROM VALUES (TIMESTAMP'2024-01-01 10:00:00'), (TIMESTAMP'2024-01-02 10:00:00') AS x(t) WHERE t < '2024-01-02';
SELECT d FROM VALUES (DATE'2024-01-01'), (DATE'2024-02-01') AS t(d) WHERE d BETWEEN '2024-01-15' AND '2024-03-01';
SELECT date_trunc('DAY', t) AS day, count(*) AS n FROM VALUES (TIMESTAMP'2024-01-01 10:00:00'), (TIMESTAMP'2024-01-01 23:59:59'), (TIMESTAMP'2024-01-02 00:00:00') AS x(t) GROUP BY 1;
SELECT CAST(TIMESTAMP'2024-01-01 23:59:59' AS DATE) AS d, CAST(DATE'2024-01-01' AS TIMESTAMP) AS t;
SELECT make_date(2024, 2, 29) AS d, make_timestamp(2024, 2, 29, 12, 30, 45.5) AS t;
SELECT date_part('YEAR', DATE'2024-05-17') AS y, extract(MONTH FROM DATE'2024-05-17') AS m, extract(DOW FROM DATE'2024-05-17') AS w;
SELECT current_date() = current_date() AS same;
SELECT window(t, '1 hour').start AS s, count(*) AS n FROM VALUES (TIMESTAMP'2024-01-01 10:15:00'), (TIMESTAMP'2024-01-01 10:45:00'), (TIMESTAMP'2024-01-01 11:05:00') AS x(t) GROUP BY window(t, '1 hour');
SELECT dayofweek(DATE'2024-01-07') AS sun, weekday(DATE'2024-01-07') AS wd, date_format(DATE'2024-01-07', 'E') AS e;
SELECT to_date(TIMESTAMP'2024-05-17 23:00:00') AS d, date(TIMESTAMP'2024-05-17 23:00:00') AS e;
-- make_timestamp and its forms: seconds with a fraction, 60 seconds, fields out of range, zones
SELECT make_timestamp(2014, 12, 28, 6, 30, 45.887) AS t, make_timestamp_ntz(2014, 12, 28, 6, 30, 45.887) AS n;
SELECT make_timestamp(2014, 12, 28, 6, 30, 45.887, 'CET') AS t, make_timestamp_ltz(2014, 12, 28, 6, 30, 45.887, 'CET') AS l;
SELECT make_timestamp(2019, 6, 30, 23, 59, 60) AS t, make_timestamp_ntz(2019, 12, 31, 23, 59, 60) AS n;
SELECT make_timestamp(2024, 13, 22, 15, 30, 0) AS t;
SELECT make_timestamp(2023, 2, 29, 0, 0, 0) AS t;
SELECT make_timestamp(2024, 1, 1, 0, 0, 60.5) AS t;
SELECT try_make_timestamp(2024, 13, 22, 15, 30, 0) AS t, try_make_timestamp_ntz(2024, 2, 30, 0, 0, 0) AS n, try_make_timestamp_ltz(2024, 1, 1, 25, 0, 0) AS l;
SELECT make_timestamp(y, m, d, 12, 0, s) AS t FROM VALUES (2024, 1, 31, 1.5), (2024, NULL, 1, 0.0), (2024, 2, 29, 59.999999) AS x(y, m, d, s);
SELECT make_timestamp(2024, 3, 10, 2, 30, 0, 'America/New_York') AS gap, make_timestamp(2024, 11, 3, 1, 30, 0, 'America/New_York') AS overlap;
SELECT make_timestamp(2024, 3, 31, 2, 30, 0, 'Europe/Oslo') AS gap, make_timestamp(2024, 10, 27, 2, 30, 0, 'Europe/Oslo') AS overlap;
SELECT make_timestamp(2024, 6, 1, 12, 0, 0, z) AS t FROM VALUES ('UTC'), ('+05:30'), ('Asia/Tokyo'), (NULL) AS x(z);
-- Date functions given a string or a timestamp (Spark casts it to a DATE)
SELECT date_add('2016-07-30', 1) AS a, date_sub('2016-07-30', 1) AS s, add_months('2016-08-31', 1) AS m;
SELECT last_day('2009-01-12') AS l, next_day('2015-01-14', 'TU') AS n, monthname('2008-02-20') AS m, dayname(DATE'2008-02-20') AS d;
SELECT date_add(TIMESTAMP'2024-05-17 23:30:00', 1) AS a, add_months(TIMESTAMP'2024-01-31 10:00:00', 1) AS m;
SELECT date_add('2024-13-01', 1) AS a;
SELECT date_add(d, 2) AS a FROM VALUES ('2024-02-28'), ('2024-02-28 10:00:00'), (NULL) AS x(d);
-- Seconds keep their fraction
SELECT date_part('SECONDS', TIMESTAMP'2019-10-01 00:00:01.000001') AS s, extract(SECOND FROM TIMESTAMP'2024-01-01 10:20:59.5') AS t;
SELECT extract(SECONDS FROM t) AS s FROM VALUES (TIMESTAMP'2024-01-01 00:00:00'), (TIMESTAMP'2024-01-01 23:59:59.999999'), (NULL) AS x(t);
-- months_between: whole months on the same day or both month ends, else over a 31-day month
SELECT months_between('1997-02-28 10:30:00', '1996-10-30') AS a, months_between('1997-02-28 10:30:00', '1996-10-30', false) AS b;
SELECT months_between(DATE'2024-02-29', DATE'2024-01-31') AS a, months_between(TIMESTAMP'2024-03-15 00:00:00', TIMESTAMP'2024-01-15 12:00:00') AS b, months_between(DATE'2024-01-01', DATE'2024-03-17') AS c;
SELECT months_between(a, b) AS m FROM VALUES (TIMESTAMP'2024-05-31 23:59:59', TIMESTAMP'2023-02-01 00:00:01'), (NULL, TIMESTAMP'2024-01-01 00:00:00') AS x(a, b);
-- to_utc_timestamp in zones that change their clocks: the hour skipped and the hour passed twice
SELECT to_utc_timestamp(TIMESTAMP'2024-03-10 02:30:00', 'America/New_York') AS gap, to_utc_timestamp(TIMESTAMP'2024-11-03 01:30:00', 'America/New_York') AS overlap;
SELECT to_utc_timestamp(t, 'Europe/London') AS u FROM VALUES (TIMESTAMP'2024-03-31 01:30:00'), (TIMESTAMP'2024-10-27 01:30:00'), (TIMESTAMP'2024-07-01 12:00:00'), (NULL) AS x(t);
SELECT to_utc_timestamp('2017-07-14 02:40:00.0', 'GMT+1') AS a, to_utc_timestamp(DATE'2024-06-01', 'Europe/Berlin') AS b;
-- Time windows in a batch GROUP BY: tumbling, hopping with a start offset, the whole struct, dates, NULL times.
SELECT window.start, window.end, count(*) AS n, sum(v) AS total FROM VALUES (TIMESTAMP'2024-03-10 01:59:59', 1), (TIMESTAMP'2024-03-10 02:00:00', 2), (TIMESTAMP'2024-03-10 02:14:59.999999', 3), (NULL, 4) AS t(ts, v) GROUP BY window(ts, '15 minutes') ORDER BY start;
SELECT k, window.start, window.end, count(*) AS n FROM VALUES ('a', TIMESTAMP'2024-01-01 00:00:07'), ('a', TIMESTAMP'2024-01-01 00:00:13'), ('b', TIMESTAMP'2024-01-01 00:00:29') AS t(k, ts) GROUP BY k, window(ts, '20 seconds', '10 seconds', '5 seconds') ORDER BY k, start;
SELECT window(ts, '1 hour') AS w, max(v) AS m FROM VALUES (TIMESTAMP'2024-01-01 10:30:00', 1), (TIMESTAMP'2024-01-01 10:59:00', 5), (TIMESTAMP'2024-01-01 11:00:00', 2) AS t(ts, v) GROUP BY window(ts, '1 hour') ORDER BY w.start;
SELECT w.start, window_time(w) AS last, typeof(w) AS t FROM (SELECT window AS w, count(*) AS n FROM VALUES (TIMESTAMP_NTZ'2024-01-01 10:30:00'), (TIMESTAMP_NTZ'2024-01-01 10:31:00') AS t(ts) GROUP BY window(ts, '10 minutes'));
SELECT window.start, count(*) AS n FROM VALUES (DATE'2024-01-01'), (DATE'2024-01-02') AS t(d) GROUP BY window(d, '1 day') ORDER BY 1;
SELECT e, window_time(window) AS last, n FROM (SELECT window.end AS e, window, count(*) AS n FROM VALUES ('2021-01-01 00:04:30'), ('2021-01-01 00:06:00') AS t(b) GROUP BY window(b, '5 minutes'));
-- Seconds, milliseconds and microseconds since the epoch: floating point truncated to the microsecond, NaN NULL, an integer or DECIMAL exactly or not at all
SELECT TIMESTAMP_SECONDS(0.1234567D) AS a, TIMESTAMP_SECONDS(1.2345675D) AS b, TIMESTAMP_SECONDS(-0.1234567D) AS c, TIMESTAMP_SECONDS(CAST('NaN' AS DOUBLE)) AS d, TIMESTAMP_SECONDS(CAST(0.1 AS FLOAT)) AS e, TIMESTAMP_SECONDS(12) AS f, TIMESTAMP_SECONDS(1.5) AS g;
SELECT TIMESTAMP_SECONDS(0.1234567) AS a;
SELECT TIMESTAMP_SECONDS(92233720368547758) AS a;
SELECT TIMESTAMP_MILLIS(92233720368547758) AS a;
SELECT TIMESTAMP_MILLIS(x) AS a FROM VALUES (-92233720368547758L), (1L) AS t(x);
SELECT timestampadd(MONTH, 1, DATE'2024-01-31') AS a, timestampadd(SECOND, 1.5, TIMESTAMP'2024-01-01 00:00:00') AS b, timestampadd(DAY, 1, '2024-01-01') AS c, dateadd(HOUR, 2, DATE'2024-01-01') AS d, date_add(DAY, 2, DATE'2024-01-01') AS e;
SELECT timestampadd(MICROSECOND, 5, TIMESTAMP'2024-01-01 00:00:00') AS a, timestampadd(QUARTER, 1, TIMESTAMP'2024-01-01 00:00:00') AS b, timestampadd(WEEK, -1, TIMESTAMP'2024-01-01 00:00:00') AS c, timestampadd(YEAR, 1, TIMESTAMP'2024-02-29 10:00:00') AS d, timestampadd(DAYOFYEAR, 1, DATE'2024-01-01') AS e;
SELECT timestampadd(DAY, 1, TIMESTAMP_NTZ'2024-03-30 02:30:00') AS a, timestampadd(HOUR, NULL, TIMESTAMP'2024-01-01 00:00:00') AS b, timestampadd(MONTH, -13, TIMESTAMP'2024-03-31 23:59:59.999999') AS c;
SELECT timestampadd(HOUR, 2147483647000, TIMESTAMP'2024-01-01 00:00:00');
SELECT timestampadd('HOUR', 1, TIMESTAMP'2024-01-01 00:00:00');
SELECT timestampdiff(MONTH, TIMESTAMP'2024-01-31 10:00:00', TIMESTAMP'2024-02-29 09:00:00') AS a, timestampdiff(YEAR, DATE'2020-02-29', DATE'2021-02-28') AS b, timestampdiff(SECOND, TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP'2023-12-31 23:59:58.5') AS c, timestampdiff(WEEK, DATE'2024-01-01', DATE'2024-01-15') AS d, timestampdiff(QUARTER, DATE'2024-01-01', DATE'2024-07-01') AS e, timestampdiff(MILLISECOND, TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP'2024-01-01 00:00:01.2345') AS f;
SELECT datediff(HOUR, DATE'2024-01-01', DATE'2024-01-02') AS a, date_diff(MINUTE, TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP'2024-01-01 00:10:00') AS b, datediff(DATE'2024-01-10', DATE'2024-01-01') AS c, timediff(DAY, TIMESTAMP'2024-01-03 12:00:00', TIMESTAMP'2024-01-01 00:00:00') AS d;
WITH t(a, b) AS (VALUES (TIMESTAMP'2024-01-31 10:00:00', TIMESTAMP'2024-03-30 10:00:00'), (TIMESTAMP'2024-03-31 00:00:00', TIMESTAMP'2024-02-29 00:00:01'), (TIMESTAMP'2023-12-31 23:59:59', TIMESTAMP'2025-01-01 00:00:00'), (NULL, TIMESTAMP'2024-01-01 00:00:00'))
SELECT timestampdiff(MONTH, a, b) AS m, timestampdiff(YEAR, a, b) AS y, timestampdiff(DAY, a, b) AS d, timestampdiff(HOUR, b, a) AS h, timestampadd(MONTH, timestampdiff(MONTH, a, b), a) AS back FROM t;
SELECT timestampdiff(DAYOFYEAR, DATE'2024-01-01', DATE'2024-01-03');
SELECT timestampadd(DAY, 1, 'x') AS a, timestampdiff(DAY, 'x', DATE'2024-01-01') AS b;
SELECT to_timestamp('2024-01-01 10:00', 'yyyy-MM-dd HH:mm[:ss]') a, to_timestamp('2024-01-01 10:00:05', 'yyyy-MM-dd HH:mm[:ss]') b, to_timestamp('2024-01-01', 'yyyy-MM-dd[ HH:mm]') c;
SELECT date_format(TIMESTAMP'2024-01-01 10:00:05', 'yyyy-MM-dd[ HH:mm]') a, date_format(TIMESTAMP'2024-01-01 10:00:05', '[yyyy]-MM') b;
SELECT to_date('2024-01', 'yyyy-MM[-dd]') a, to_date('2024-01-05', 'yyyy-MM[-dd]') b, to_timestamp('2024-01-01T10:00:00.123', 'yyyy-MM-dd''T''HH:mm:ss[.SSS]') c, to_timestamp('2024-01-01T10:00:00', 'yyyy-MM-dd''T''HH:mm:ss[.SSS]') d;
SELECT try_to_timestamp('2024-01-01 10', 'yyyy-MM-dd HH[:mm[:ss]]') a, try_to_timestamp('2024-01-01 10:07', 'yyyy-MM-dd HH[:mm[:ss]]') b, try_to_timestamp('2024-01-01 10:07:09', 'yyyy-MM-dd HH[:mm[:ss]]') c, try_to_timestamp('2024-01-01 10:07:', 'yyyy-MM-dd HH[:mm[:ss]]') d;
SELECT to_timestamp('2024-01-01 10:00 UTC', 'yyyy-MM-dd HH:mm[ zzz]') a, to_timestamp('2024-01-01 10:00', 'yyyy-MM-dd HH:mm[ zzz]') b;
SELECT unix_timestamp('2024-01-01 10:00', 'yyyy-MM-dd HH:mm[:ss]') a, to_date('2024', 'yyyy') b, to_timestamp('2024-03-05 7', 'yyyy-MM-dd H') c;
SELECT unix_timestamp('2024-01-01T10:00:00Z') AS a;
SELECT unix_timestamp('2024-01-01 10:00:00') AS a, to_unix_timestamp('2024-01-01 10:00:00.5') AS b;
SELECT unix_timestamp('2024-01-01') AS a;
SELECT unix_timestamp(DATE'2024-01-01') AS a, unix_timestamp(TIMESTAMP'2024-01-01 00:00:01') AS b, unix_timestamp(CAST(NULL AS STRING)) AS c, to_unix_timestamp('2024-02-29 23:59:59') AS d;
-- Spark 4.1 has the TIME type's functions but fails any query holding a TIME.
SELECT TIME'09:00' AS a;
SELECT CAST('09:00' AS TIME) AS a;
SELECT hour(to_time('09:00')) AS a;
