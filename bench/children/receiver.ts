/**
 * The bench's webhook receiver, a child process of its own (so its CPU shows up apart from
 * the sender's). One HTTP server per endpoint on 127.0.0.1 (endpoint i listens on port i of
 * the list it reports), so every endpoint is its own origin as real receivers are.
 *
 * Behaviour, set over IPC: answer 200 at once (default), after a fixed delay, 500 at a given
 * rate, or never (the "hanging" endpoints, until the client gives up). It timestamps every
 * request when its body has arrived, counts healthy and hanging endpoints apart, checks that
 * every request carries a signature and verifies one in `verifyEvery` of them.
 */
import { createHmac } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { ReceiverStats } from "../lib/receiver.ts";

interface Behaviour {
  delayMs: number;
  failRate: number;
  hanging: Set<number>;
  record: boolean;
  /** base64 HMAC key; null = do not verify */
  secretKey: Buffer | null;
  verifyEvery: number;
}

type Counters = ReceiverStats;

const fresh = (): Counters => ({
  total: 0,
  healthy: 0,
  hung: 0,
  failed: 0,
  unsigned: 0,
  badSignature: 0,
  verified: 0,
  first: 0,
  last: 0,
  healthyFirst: 0,
  healthyLast: 0,
});

const endpoints = Number(process.argv[2] ?? 100);
let behaviour: Behaviour = {
  delayMs: 0,
  failRate: 0,
  hanging: new Set(),
  record: false,
  secretKey: null,
  verifyEvery: 100,
};
let c = fresh();
let recordedIds: string[] = [];
let recordedAt: number[] = [];
const sockets = new Set<Socket>();
const hungResponses = new Set<http.ServerResponse>();
// Rates are taken between two moments of this process: the monotonic clock. Recorded
// arrival times are compared with other processes' (PostgreSQL's now(), the load
// generator's schedule): the wall clock, which all of them share. The two drift apart on
// this VM (38 s in one 6-minute run), so each is used only for its own purpose.
const nowMs = () => performance.timeOrigin + performance.now();

function verify(id: string, timestamp: string, body: string, header: string, key: Buffer): boolean {
  const expected = createHmac("sha256", key)
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest("base64");
  return header.split(" ").some((part) => part === `v1,${expected}`);
}

function handler(index: number) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const sample = behaviour.secretKey !== null && (c.total + 1) % behaviour.verifyEvery === 0;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      if (sample) chunks.push(chunk);
    });
    req.on("end", () => {
      const at = nowMs();
      c.total++;
      if (c.first === 0) c.first = at;
      c.last = at;
      const id = req.headers["webhook-id"];
      const signature = req.headers["webhook-signature"];
      if (typeof signature !== "string") c.unsigned++;
      else if (sample && typeof id === "string" && behaviour.secretKey) {
        const ok = verify(
          id,
          String(req.headers["webhook-timestamp"]),
          Buffer.concat(chunks).toString("utf8"),
          signature,
          behaviour.secretKey,
        );
        if (ok) c.verified++;
        else c.badSignature++;
      }
      if (behaviour.hanging.has(index)) {
        c.hung++;
        hungResponses.add(res);
        res.on("close", () => hungResponses.delete(res));
        return;
      }
      c.healthy++;
      if (c.healthyFirst === 0) c.healthyFirst = at;
      c.healthyLast = at;
      if (behaviour.record && typeof id === "string") {
        recordedIds.push(id);
        recordedAt.push(Date.now());
      }
      const fail = behaviour.failRate > 0 && Math.random() < behaviour.failRate;
      if (fail) c.failed++;
      const answer = () => {
        res.writeHead(fail ? 500 : 200, { "content-type": "text/plain" });
        res.end(fail ? "fail" : "ok");
      };
      if (behaviour.delayMs > 0) setTimeout(answer, behaviour.delayMs);
      else answer();
    });
  };
}

async function listen(index: number): Promise<number> {
  const server = http.createServer(handler(index));
  // Longer than any client's keep-alive, so the client always closes idle sockets first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

interface Command {
  seq: number;
  cmd: "configure" | "reset" | "stats" | "records";
  delayMs?: number;
  failRate?: number;
  hanging?: number[];
  record?: boolean;
  secret?: string | null;
}

function reply(seq: number, body: object) {
  process.send?.({ seq, ...body });
}

process.on("message", (m: Command) => {
  switch (m.cmd) {
    case "configure": {
      const secret = m.secret ?? null;
      behaviour = {
        delayMs: m.delayMs ?? 0,
        failRate: m.failRate ?? 0,
        hanging: new Set(m.hanging ?? []),
        record: m.record ?? false,
        secretKey: secret ? Buffer.from(secret.replace(/^whsec_/, ""), "base64") : null,
        verifyEvery: 100,
      };
      return reply(m.seq, { ok: true });
    }
    case "reset":
      // Hanging requests are cut off, so the next scenario starts from idle sockets.
      for (const res of hungResponses) res.socket?.destroy();
      hungResponses.clear();
      c = fresh();
      recordedIds = [];
      recordedAt = [];
      return reply(m.seq, { ok: true });
    case "stats":
      return reply(m.seq, { stats: c, sockets: sockets.size });
    case "records":
      return reply(m.seq, { ids: recordedIds, at: recordedAt });
  }
});
process.on("disconnect", () => process.exit(0));

const ports: number[] = [];
for (let i = 0; i < endpoints; i++) ports.push(await listen(i));
process.send?.({ seq: 0, ready: true, ports });
