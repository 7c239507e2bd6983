/**
 * The broker transports' link cache (broker-links.ts), on links of the test's own: one link
 * per endpoint shared by concurrent publishes, replaced when it dies or its key changes, a
 * failed open not kept, and nothing usable once closed.
 */
import { expect, test } from "vitest";
import { type BrokerLink, LinksClosedError, makeBrokerLinks } from "./broker-links.ts";

interface TestLink extends BrokerLink {
  id: number;
  alive: boolean;
  closed: boolean;
}

function opener() {
  const opened: TestLink[] = [];
  const open = async (): Promise<TestLink> => {
    const link: TestLink = {
      id: opened.length + 1,
      alive: true,
      closed: false,
      async close() {
        this.alive = false;
        this.closed = true;
      },
    };
    opened.push(link);
    return link;
  };
  return { opened, open };
}

const idOf = async (link: TestLink) => link.id;

test("publishes to one endpoint share its link; another endpoint gets its own", async () => {
  const links = makeBrokerLinks<TestLink>(60_000);
  const { opened, open } = opener();
  const ids = await Promise.all([
    links.use("ep1", "k", open, idOf),
    links.use("ep1", "k", open, idOf),
    links.use("ep2", "k", open, idOf),
  ]);
  expect(ids).toEqual([1, 1, 2]);
  expect(opened).toHaveLength(2);
  await links.close();
  expect(opened.every((l) => l.closed)).toBe(true);
});

test("a dead link, or one opened for another key, is replaced (the old one closed)", async () => {
  const links = makeBrokerLinks<TestLink>(60_000);
  const { opened, open } = opener();
  expect(await links.use("ep", "k1", open, idOf)).toBe(1);
  opened[0]!.alive = false;
  expect(await links.use("ep", "k1", open, idOf)).toBe(2);
  expect(await links.use("ep", "k2", open, idOf)).toBe(3);
  await new Promise((r) => setImmediate(r));
  expect(opened[1]!.closed).toBe(true);
  expect(await links.use("ep", "k2", open, idOf)).toBe(3);
  await links.close();
});

test("a failed open fails its publishes and is not kept; after close() nothing is used", async () => {
  const links = makeBrokerLinks<TestLink>(60_000);
  const { open } = opener();
  const refused = new Error("connection refused");
  await expect(links.use("ep", "k", () => Promise.reject(refused), idOf)).rejects.toBe(refused);
  expect(await links.use("ep", "k", open, idOf)).toBe(1);
  await links.close();
  await expect(links.use("ep", "k", open, idOf)).rejects.toBeInstanceOf(LinksClosedError);
});

test("a link no publish used for idleCloseMs is closed; the next publish opens one", async () => {
  const links = makeBrokerLinks<TestLink>(20);
  const { opened, open } = opener();
  expect(await links.use("ep", "k", open, idOf)).toBe(1);
  const until = Date.now() + 5_000;
  while (!opened[0]!.closed && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  expect(opened[0]!.closed).toBe(true);
  expect(await links.use("ep", "k", open, idOf)).toBe(2);
  await links.close();
});
