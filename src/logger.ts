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
  return pino(
    {
      level,
      base: { service: "hookrelay" },
      formatters: {
        log: (object) => redactor.object(object),
      },
      // A child's bindings are serialized once, when the child is made, and never pass through
      // formatters.log: they are masked here, in their serialized form.
      onChild: (child) => maskBindings(child, redactor),
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((a) => (typeof a === "string" ? redactor.text(a) : a)) as Parameters<
              typeof method
            >,
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
    },
    destination,
  );
}

/** Masks the serialized bindings (`,"key":value,...`) a child logger writes on every line. */
function maskBindings(child: Logger, redactor: Redactor): void {
  const holder = child as unknown as Record<symbol, unknown>;
  const serialized = holder[pino.symbols.chindingsSym];
  if (typeof serialized !== "string" || serialized.length === 0) return;
  try {
    const masked = JSON.stringify(redactor.object(JSON.parse(`{${serialized.slice(1)}}`)));
    holder[pino.symbols.chindingsSym] = `,${masked.slice(1, -1)}`;
  } catch {
    // not JSON after all (a custom serializer): left as pino wrote it
  }
}

/** A logger that drops everything (tests, library use). */
export const silentLogger: Logger = pino({ level: "silent" });
