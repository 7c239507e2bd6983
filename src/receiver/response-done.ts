/** Calls `done(ok)` once the response is over: ok when it was sent in full with a 2xx status. */
import type { ServerResponse } from "node:http";

export function onResponseDone(res: ServerResponse, done: (ok: boolean) => void): void {
  // 'close' comes after 'finish', and also when the connection drops before the end
  res.once("close", () =>
    done(res.writableFinished && res.statusCode >= 200 && res.statusCode < 300),
  );
}
