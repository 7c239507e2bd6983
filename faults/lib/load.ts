/**
 * The fault run's producer: sends `messages` messages through the API, paced evenly over
 * `durationMs` by `concurrency` senders, and keeps each one until it is accepted, as a
 * careful client would: a 503 is retried after its Retry-After, with the same `eventId`, so
 * a commit whose answer was lost is found again instead of sent twice
 * (docs/reliability.md). Every answer is counted: 500s must never happen.
 */
export interface LoadOptions {
  apiUrl: string;
  key: string;
  appId: string;
  messages: number;
  durationMs: number;
  concurrency: number;
  /** a message not accepted by then is given up (and reported) */
  giveUpAt: number;
}

export interface LoadResult {
  /** accepted message ids, in order of acceptance */
  accepted: string[];
  /** when each accepted message's answering request was sent and answered */
  acceptances: { id: string; sentAt: number; at: number }[];
  /** messages given up on */
  givenUp: number;
  answers503: number;
  /** 503s without a Retry-After header */
  missingRetryAfter: number;
  answers500: number;
  /** bodies of the first few 500s (for the report) */
  samples500: string[];
  /** other unexpected answers or network errors */
  otherErrors: number;
  finishedAt: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function sendMessages(o: LoadOptions): Promise<LoadResult> {
  const result: LoadResult = {
    accepted: [],
    acceptances: [],
    givenUp: 0,
    answers503: 0,
    missingRetryAfter: 0,
    answers500: 0,
    samples500: [],
    otherErrors: 0,
    finishedAt: 0,
  };
  const start = Date.now();
  const gap = o.durationMs / Math.max(1, o.messages);
  let next = 0;

  async function sendOne(n: number): Promise<void> {
    const body = JSON.stringify({ eventType: "fault.test", eventId: `fault-${n}`, payload: { n } });
    while (Date.now() < o.giveUpAt) {
      let wait = 200;
      const sentAt = Date.now();
      try {
        const res = await fetch(`${o.apiUrl}/api/v1/app/${o.appId}/msg`, {
          method: "POST",
          headers: { authorization: `Bearer ${o.key}`, "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        if (res.status === 202 || res.status === 200) {
          const id = (JSON.parse(text) as { id: string }).id;
          result.accepted.push(id);
          result.acceptances.push({ id, sentAt, at: Date.now() });
          return;
        }
        if (res.status === 503) {
          result.answers503++;
          const after = Number(res.headers.get("retry-after"));
          if (!Number.isFinite(after) || after <= 0) result.missingRetryAfter++;
          else wait = after * 1_000;
        } else if (res.status >= 500) {
          result.answers500++;
          if (result.samples500.length < 3) result.samples500.push(text.slice(0, 300));
        } else {
          result.otherErrors++;
        }
      } catch {
        result.otherErrors++;
      }
      await sleep(wait);
    }
    result.givenUp++;
  }

  async function sender(): Promise<void> {
    for (;;) {
      const n = next++;
      if (n >= o.messages) return;
      const due = start + n * gap;
      if (due > Date.now()) await sleep(due - Date.now());
      await sendOne(n);
    }
  }

  await Promise.all(Array.from({ length: o.concurrency }, sender));
  result.finishedAt = Date.now();
  return result;
}
