/**
 * The fault run's webhook receiver, in the run's own process (so its clock is the one the
 * kills are timed with): one HTTP server per endpoint on 127.0.0.1, endpoint i on its own
 * port. It logs which delivery (message id × endpoint) arrived when and how it was
 * answered, and scripts two faults:
 *
 * - the first attempt of one delivery in `failEvery` is answered 503 (retried by hookrelay);
 * - one request in `holdEvery` is held open for `holdMs` before its 200, so that a SIGKILL
 *   catches requests in flight. A held request whose connection closes before it is
 *   answered is logged as cut (its worker died): the crash-to-redelivery time is measured
 *   from the kill to the next arrival of that delivery.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface ReceiverFaults {
  /** the first attempt of one delivery in this many answers 503 (0 = none) */
  failEvery: number;
  /** one request in this many is held open (0 = none) */
  holdEvery: number;
  holdMs: number;
}

export interface Arrival {
  key: string;
  at: number;
  /** the status it was answered with; null: its connection closed before the answer */
  status: number | null;
}

export interface FaultReceiver {
  urls: string[];
  /** every request, in order of arrival (a cut request's status is set to null later) */
  arrivals: Arrival[];
  /** deliveries answered 2xx, with how many times */
  delivered: Map<string, number>;
  /** held requests cut before their answer: delivery and when the connection closed */
  cuts: { key: string; at: number }[];
  /** requests being held right now */
  readonly holding: number;
  close(): Promise<void>;
}

/** A number in [0, 2^32) from a string: the same delivery always meets the same fault. */
function hash(text: string): number {
  return createHash("sha1").update(text).digest().readUInt32BE(0);
}

export async function startFaultReceiver(
  endpoints: number,
  faults: ReceiverFaults,
): Promise<FaultReceiver> {
  const arrivals: Arrival[] = [];
  const delivered = new Map<string, number>();
  const seen = new Map<string, number>();
  const cuts: { key: string; at: number }[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let holding = 0;
  let requestNo = 0;

  function handler(index: number) {
    return (req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      req.on("end", () => {
        const id = String(req.headers["webhook-id"] ?? "");
        const key = `${id}|${index}`;
        const attempt = (seen.get(key) ?? 0) + 1;
        seen.set(key, attempt);
        const arrival: Arrival = { key, at: Date.now(), status: null };
        arrivals.push(arrival);
        const answer = (status: number) => {
          arrival.status = status;
          if (status < 300) delivered.set(key, (delivered.get(key) ?? 0) + 1);
          res.writeHead(status, { "content-type": "text/plain" });
          res.end(status < 300 ? "ok" : "try later");
        };
        if (attempt === 1 && faults.failEvery > 0 && hash(key) % faults.failEvery === 0) {
          answer(503);
          return;
        }
        requestNo++;
        if (faults.holdEvery > 0 && requestNo % faults.holdEvery === 0) {
          holding++;
          let done = false;
          const timer = setTimeout(() => {
            timers.delete(timer);
            if (done) return;
            done = true;
            holding--;
            answer(200);
          }, faults.holdMs);
          timers.add(timer);
          res.on("close", () => {
            if (done) return;
            // closed before the answer: the worker holding it is gone (or gave up)
            done = true;
            holding--;
            clearTimeout(timer);
            timers.delete(timer);
            cuts.push({ key, at: Date.now() });
          });
          return;
        }
        answer(200);
      });
    };
  }

  const servers: http.Server[] = [];
  const urls: string[] = [];
  for (let i = 0; i < endpoints; i++) {
    const server = http.createServer({ keepAliveTimeout: 30_000 }, handler(i));
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/e/${i}`);
  }
  return {
    urls,
    arrivals,
    delivered,
    cuts,
    get holding() {
      return holding;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}
