/**
 * A receiver's `Retry-After` header, read strictly (docs/delivery.md, Retries). The value
 * comes from a stranger: anything that is not exactly one of RFC 9110's forms is ignored, so
 * the normal backoff applies, and no value can ask for more than a day.
 *
 *   Retry-After = HTTP-date / delay-seconds        (RFC 9110 §10.2.3)
 *   delay-seconds = 1*DIGIT                         ASCII digits only: no sign, point,
 *                                                   exponent, hex or other scripts' digits
 *   HTTP-date   = IMF-fixdate / obs-date            (RFC 9110 §5.6.7)
 *     IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
 *     rfc850-date  Sunday, 06-Nov-94 08:49:37 GMT   (obsolete, two-digit year)
 *     asctime-date Sun Nov  6 08:49:37 1994         (obsolete)
 *
 * Names of days and months and "GMT" are case-sensitive, as the grammar says. A date whose
 * weekday is not that date's weekday is refused: it is not a timestamp anyone generated
 * correctly, and refusing it costs only the hint (the normal backoff applies). Leading and
 * trailing spaces and tabs are optional whitespace around the field value (RFC 9110 §5.5),
 * not part of it, and are dropped.
 */

/** Longest wait a Retry-After may ask for: a day. The endpoint's retry cap clamps it further. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
const LONG_DAYS = [
  "Sunday",
  "Monday",
  "Tuesday",
  "Wednesday",
  "Thursday",
  "Friday",
  "Saturday",
] as const;
const MONTHS = [
  "Jan",
  "Feb",
  "Mar",
  "Apr",
  "May",
  "Jun",
  "Jul",
  "Aug",
  "Sep",
  "Oct",
  "Nov",
  "Dec",
] as const;

const DAY = DAYS.join("|");
const MONTH = MONTHS.join("|");
const TIME = "([0-9]{2}):([0-9]{2}):([0-9]{2})";
// groups: weekday, day, month, year, hour, minute, second
const IMF_FIXDATE = new RegExp(`^(${DAY}), ([0-9]{2}) (${MONTH}) ([0-9]{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(
  `^(${LONG_DAYS.join("|")}), ([0-9]{2})-(${MONTH})-([0-9]{2}) ${TIME} GMT$`,
);
// groups: weekday, month, day (two digits, or a space and one digit), hour, minute, second, year
const ASCTIME_DATE = new RegExp(`^(${DAY}) (${MONTH}) ([0-9]{2}| [0-9]) ${TIME} ([0-9]{4})$`);

const DELAY_SECONDS = /^[0-9]+$/;
const OWS_EDGES = /^[ \t]+|[ \t]+$/g;

/**
 * Parses a Retry-After header into milliseconds from `now`: null when absent or invalid,
 * 0 for a date in the past, at most MAX_RETRY_AFTER_MS. A repeated header (an array, as
 * undici gives it) is read by its first line only; a comma-joined list is not a valid value.
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  now: number = Date.now(),
): number | null {
  const first = typeof value === "string" ? value : value?.[0];
  if (first === undefined) return null;
  const text = first.replace(OWS_EDGES, "");
  if (DELAY_SECONDS.test(text)) {
    // Number() of a long digit string is huge or Infinity; both clamp to the day.
    return Math.min(MAX_RETRY_AFTER_MS, Number(text) * 1000);
  }
  const at = parseHttpDate(text, now);
  if (at === null) return null;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - now));
}

/** An HTTP-date in one of RFC 9110's three formats as epoch ms, or null. */
export function parseHttpDate(text: string, now: number = Date.now()): number | null {
  let m = IMF_FIXDATE.exec(text);
  if (m) {
    const [, wd = "", day = "", mon = "", year = "", hh = "", mm = "", ss = ""] = m;
    return timestamp(indexIn(DAYS, wd), Number(year), mon, day, hh, mm, ss);
  }
  m = RFC850_DATE.exec(text);
  if (m) {
    const [, wd = "", day = "", mon = "", yy = "", hh = "", mm = "", ss = ""] = m;
    return timestamp(indexIn(LONG_DAYS, wd), fullYear(Number(yy), now), mon, day, hh, mm, ss);
  }
  m = ASCTIME_DATE.exec(text);
  if (m) {
    const [, wd = "", mon = "", day = "", hh = "", mm = "", ss = "", year = ""] = m;
    return timestamp(indexIn(DAYS, wd), Number(year), mon, day, hh, mm, ss);
  }
  return null;
}

const indexIn = (names: readonly string[], name: string) => names.indexOf(name);

/**
 * A two-digit year: RFC 9110 §5.6.7 reads one that appears more than 50 years in the future
 * as the most recent past year with the same last two digits.
 */
function fullYear(yy: number, now: number): number {
  const current = new Date(now).getUTCFullYear();
  const year = current - (current % 100) + yy;
  return year > current + 50 ? year - 100 : year;
}

/** Epoch ms of a checked date and time, or null when a field is out of range or the weekday is wrong. */
function timestamp(
  weekday: number,
  year: number,
  monthName: string,
  dayText: string,
  hourText: string,
  minuteText: string,
  secondText: string,
): number | null {
  const month = indexIn(MONTHS, monthName);
  const day = Number(dayText.trim());
  const [hour, minute, second] = [Number(hourText), Number(minuteText), Number(secondText)];
  // second 60: a leap second (RFC 9110 §5.6.7 allows it); it counts as the next minute's 0
  if (hour > 23 || minute > 59 || second > 60 || day < 1) return null;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0-99 to 1900-1999
  date.setUTCFullYear(year, month, day);
  // Feb 30 or Apr 31 rolls over into the next month
  if (date.getUTCMonth() !== month || date.getUTCDate() !== day) return null;
  if (date.getUTCDay() !== weekday) return null;
  return date.getTime() + ((hour * 60 + minute) * 60 + second) * 1000;
}
