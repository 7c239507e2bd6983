/**
 * How a run that starts servers and child processes (the fault scenarios, the bench) ends
 * when it does not end by itself: the watchdog gives up (exit 2), SIGINT or SIGTERM stops
 * it (exit 130), and an error nothing caught fails it (exit 1): an 'error' event without a
 * listener, a rejection nobody awaited. Each way runs `cleanup` first, so no PostgreSQL,
 * hookrelay worker or receiver is left running after the run is gone.
 */
export function guardRun(o: {
  watchdogSeconds: number;
  log: (line: string) => void;
  cleanup: () => Promise<void>;
  /** what to print before cleaning up when the watchdog fires */
  beforeGivingUp?: () => Promise<void>;
}): void {
  let ending = false;
  const end = (code: number, before?: () => Promise<void>) => {
    if (ending) return;
    ending = true;
    void (async () => {
      await before?.().catch(() => undefined);
      await o.cleanup().catch((err: Error) => o.log(`cleanup: ${err.message}`));
      process.exit(code);
    })();
  };
  const watchdog = setTimeout(() => {
    o.log(`gave up after ${o.watchdogSeconds} s`);
    end(2, o.beforeGivingUp);
  }, o.watchdogSeconds * 1_000);
  watchdog.unref();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      o.log(`${signal}: cleaning up`);
      end(130);
    });
  }
  const crash = (err: unknown) => {
    o.log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    end(1);
  };
  process.on("uncaughtException", crash);
  process.on("unhandledRejection", crash);
}
