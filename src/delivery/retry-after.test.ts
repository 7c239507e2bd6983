import { describe, expect, test } from "vitest";
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from "./retry-after.ts";

// Sunday 1 March 2026, noon UTC
const NOW = Date.parse("2026-03-01T12:00:00Z");
const HOUR = 3_600_000;
const DAY = MAX_RETRY_AFTER_MS;

describe("Retry-After from a hostile receiver", () => {
  // [header value, ms from NOW or null (ignored: the normal backoff applies), why]
  const table: [string, number | null, string][] = [
    // delay-seconds: ASCII digits and nothing else
    ["0", 0, "retry now"],
    ["1", 1_000, "one second"],
    ["120", 120_000, "two minutes"],
    ["2001", 2_001_000, "a number, not a year"],
    [" 120 ", 120_000, "optional whitespace around the field value"],
    ["\t120\t", 120_000, "tabs are optional whitespace too"],
    ["0120", 120_000, "leading zeros are still 1*DIGIT"],
    ["86400", DAY, "exactly a day"],
    ["86401", DAY, "beyond a day: clamped"],
    ["99999999999999999999", DAY, "a huge integer: clamped"],
    ["9".repeat(400), DAY, "a digit string whose Number() is Infinity: clamped"],
    ["-5", null, "negative"],
    ["+5", null, "a sign"],
    ["1.5", null, "a fraction"],
    ["1e3", null, "an exponent"],
    ["0x10", null, "hexadecimal"],
    ["120abc", null, "trailing garbage"],
    ["1 20", null, "space inside"],
    ["120, 60", null, "a comma-joined list"],
    ["", null, "empty"],
    ["   ", null, "only whitespace"],
    ["NaN", null, "NaN"],
    ["Infinity", null, "Infinity"],
    ["١٢٠", null, "Arabic-Indic digits"],
    ["１２０", null, "fullwidth digits"],
    ["120\u00a0", null, "a no-break space is not optional whitespace"],
    ["\u0000120", null, "a NUL"],
    // IMF-fixdate
    ["Wed, 21 Oct 2015 07:28:00 GMT", 0, "in the past: retry now"],
    ["Sun, 01 Mar 2026 14:00:00 GMT", 2 * HOUR, "two hours ahead"],
    ["Sun, 01 Mar 2026 12:59:60 GMT", HOUR, "a leap second counts as the next minute"],
    ["Tue, 31 Mar 2026 00:00:00 GMT", DAY, "a month ahead: clamped"],
    ["Fri, 31 Dec 9999 23:59:59 GMT", DAY, "the far future: clamped"],
    ["Mon, 01 Mar 2026 14:00:00 GMT", null, "wrong weekday (1 March 2026 is a Sunday)"],
    ["Mon, 99 Foo 2030 99:99:99 GMT", null, "no such month, day or time"],
    ["Sun, 30 Feb 2026 14:00:00 GMT", null, "no 30 February"],
    ["Sun, 01 Mar 2026 24:00:00 GMT", null, "hour 24"],
    ["Sun, 01 Mar 2026 14:60:00 GMT", null, "minute 60"],
    ["Sun, 00 Mar 2026 14:00:00 GMT", null, "day 0"],
    ["Sun, 1 Mar 2026 14:00:00 GMT", null, "one-digit day"],
    ["sun, 01 mar 2026 14:00:00 gmt", null, "names are case-sensitive"],
    ["Sun, 01 Mar 2026 14:00:00 UTC", null, "not GMT"],
    ["Sun, 01 Mar 2026 14:00:00 +0000", null, "a numeric zone"],
    ["Sun, 01 Mar 2026 14:00:00 GMT, Sun, 01 Mar 2026 15:00:00 GMT", null, "two dates"],
    ["2026-03-01T14:00:00Z", null, "ISO 8601 is not an HTTP-date"],
    ["Sun Mar 01 2026 14:00:00 GMT+0000", null, "JavaScript's Date string"],
    // obsolete RFC 850 (two-digit year) and asctime
    ["Sunday, 01-Mar-26 14:00:00 GMT", 2 * HOUR, "RFC 850"],
    ["Sunday, 06-Nov-94 08:49:37 GMT", 0, "RFC 850, 94 is 1994: past"],
    ["Sunday, 01-Mar-76 00:00:00 GMT", DAY, "RFC 850, 76 is 2076 (50 years ahead): clamped"],
    ["Sun, 01-Mar-26 14:00:00 GMT", null, "RFC 850 needs the long day name"],
    ["Sun Mar  1 14:00:00 2026", 2 * HOUR, "asctime, one-digit day"],
    ["Sun Mar 01 14:00:00 2026", 2 * HOUR, "asctime, two-digit day"],
    ["Sun Nov  6 08:49:37 1994", 0, "asctime in the past"],
    ["Sun Mar 1 14:00:00 2026", null, "asctime pads a one-digit day with a space"],
    ["Mon Mar  1 14:00:00 2026", null, "asctime, wrong weekday"],
    // garbage Date.parse would take
    ["tomorrow", null, "a word"],
    ["2001-01-01", null, "a bare date"],
    ["Mar 1 2026", null, "a loose date"],
  ];

  test.each(table)("%j → %s (%s)", (value, expected) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected);
  });

  test("absent: null", () => {
    expect(parseRetryAfter(undefined, NOW)).toBeNull();
  });

  test("a repeated header is read by its first line only", () => {
    expect(parseRetryAfter(["120", "60"], NOW)).toBe(120_000);
    expect(parseRetryAfter(["soon", "120"], NOW)).toBeNull();
    expect(parseRetryAfter([], NOW)).toBeNull();
  });
});
