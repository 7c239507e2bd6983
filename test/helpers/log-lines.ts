/**
 * A destination for pino (or makeProcessLogging) that keeps what is logged, a line each
 * (pino writes one JSON line per record), for tests that look at the logs.
 */
import { Writable } from "node:stream";

/** A stream appending every line written to it to `lines` (without its newline). */
export function linesInto(lines: string[]): Writable;
/** The same, each line as `read` turns it (JSON.parse: the records themselves). */
export function linesInto<T>(lines: T[], read: (line: string) => T): Writable;
export function linesInto<T>(lines: T[], read?: (line: string) => T): Writable {
  return new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n"))
        if (line.trim() !== "") lines.push(read ? read(line) : (line as T));
      done();
    },
  });
}
