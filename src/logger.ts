/**
 * The process logger (pino). Payloads and secrets never reach it (`redact` drops them by
 * path), and every string that does is passed through the sensitive-field redactor.
 */
import pino from "pino";
import { makeRedactor, type Redactor } from "./security/redact.ts";

export type Logger = pino.Logger;

export function makeLogger(
  level: string,
  redactor: Redactor = makeRedactor(),
  destination?: pino.DestinationStream,
): Logger {
  return pino({
    level,
    base: { service: "hookrelay" },
    formatters: {
      log: (object) => redactor.object(object),
    },
    hooks: {
      logMethod(args, method) {
        method.apply(
          this,
          args.map((a) => (typeof a === "string" ? redactor.text(a) : a)) as Parameters<typeof method>,
        );
      },
    },
    redact: {
      paths: [
        "payload",
        "*.payload",
        "secret",
        "*.secret",
        "req.headers.authorization",
        "headers.authorization",
      ],
      censor: "[redacted]",
    },
  }, destination);
}

/** A logger that drops everything (tests, library use). */
export const silentLogger: Logger = pino({ level: "silent" });
