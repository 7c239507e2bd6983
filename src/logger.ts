/** The process logger (pino). Payloads and secrets never reach it: see `redact`. */
import pino from "pino";

export type Logger = pino.Logger;

export function makeLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "hookrelay" },
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
  });
}

/** A logger that drops everything (tests, library use). */
export const silentLogger: Logger = pino({ level: "silent" });
