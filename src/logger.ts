/**
 * The process logger (pino). Payloads and secrets never reach it (`redact` drops them by
 * path), and every string that does is passed through the masker it is given: the
 * process's sensitive-field redactor (src/security/redact.ts, docs/security.md, Sensitive
 * values), made once where the process is wired.
 */
import pino from "pino";
import type { Config } from "./config.ts";
import { makeRedactor, type Redactor } from "./security/redact.ts";

export type Logger = pino.Logger;

/** What the logger needs of a redactor: free text and whole log objects masked. */
export interface LogMasker {
  text(value: string): string;
  object<T>(value: T): T;
}

export function makeLogger(
  level: string,
  redactor: LogMasker,
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
function maskBindings(child: Logger, redactor: LogMasker): void {
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

/** A process's logger and the one sensitive-field redactor it masks with (docs/security.md). */
export interface ProcessLogging {
  logger: Logger;
  redactor: Redactor;
}

/** Made once per process, from the configuration; the runtime masks with the same redactor. */
export function makeProcessLogging(
  config: Pick<Config, "logLevel" | "sensitiveFields">,
  destination?: pino.DestinationStream,
): ProcessLogging {
  const redactor = makeRedactor(config.sensitiveFields);
  return { redactor, logger: makeLogger(config.logLevel, redactor, destination) };
}
