/**
 * The broker transports' connections (delivery/amqp/, delivery/nats/): one link per
 * endpoint, opened on its first publish and shared by every publish to it. A link opened
 * for other settings (the endpoint's URL, password or TLS files changed) is closed and
 * replaced; a dead one (its connection closed) is replaced by the next publish, which is
 * the reconnect, paced by the retries' backoff; a link being opened is shared by every
 * publish waiting for it (its failure is theirs), and a failed open is not kept. Links no
 * publish used for `idleCloseMs` are closed (broker-link-use.ts).
 */
import { makeLinkUse } from "./broker-link-use.ts";

/** What the cache needs of a link. */
export interface BrokerLink {
  /** false once its connection closed: open a new one */
  readonly alive: boolean;
  /** closes it; never throws */
  close(): Promise<void>;
}

export interface BrokerLinks<L extends BrokerLink> {
  /**
   * Runs `work` on the endpoint's link for `key` (what it was opened for), opening one with
   * `open` when there is none, it is dead or it was opened for another key. Throws the
   * open's error, or a LinksClosedError once `close()` was called.
   */
  use<T>(
    endpointId: string,
    key: string,
    open: () => Promise<L>,
    work: (link: L) => Promise<T>,
  ): Promise<T>;
  /** Closes every link; later uses fail. */
  close(): Promise<void>;
}

export class LinksClosedError extends Error {
  constructor() {
    super("the transport is closed");
  }
}

/** `ready`: the link, once its open resolved (publishes then reach it without a promise hop) */
type Held<L> = { key: string; link: Promise<L>; ready?: L };

const closeQuietly = <L extends BrokerLink>(held: Held<L> | undefined): void => {
  void held?.link.then((l) => l.close()).catch(() => {});
};

export function makeBrokerLinks<L extends BrokerLink>(idleCloseMs: number): BrokerLinks<L> {
  const links = new Map<string, Held<L>>();
  let closed = false;
  const use = makeLinkUse(idleCloseMs, (endpointId) => {
    const held = links.get(endpointId);
    links.delete(endpointId);
    closeQuietly(held);
  });

  /** A new link in place of `before`, unless another publish has made one already. */
  function reopen(
    endpointId: string,
    key: string,
    open: () => Promise<L>,
    before: Held<L> | undefined,
  ): Promise<L> {
    const current = links.get(endpointId);
    if (current !== undefined && current !== before && current.key === key) return current.link;
    const entry: Held<L> = { key, link: open() };
    links.set(endpointId, entry);
    entry.link.then(
      (link) => {
        entry.ready = link;
      },
      () => {
        if (links.get(endpointId) === entry) links.delete(endpointId);
      },
    );
    return entry.link;
  }

  function linkFor(endpointId: string, key: string, open: () => Promise<L>): Promise<L> | L {
    const held = links.get(endpointId);
    if (held !== undefined && held.key === key) {
      return held.link.then((link) => {
        if (link.alive) return link;
        void link.close();
        return reopen(endpointId, key, open, held);
      });
    }
    // the endpoint's settings changed: its old link goes
    if (held !== undefined) closeQuietly(held);
    return reopen(endpointId, key, open, held);
  }

  async function useSlowly<T>(
    endpointId: string,
    key: string,
    open: () => Promise<L>,
    work: (link: L) => Promise<T>,
  ): Promise<T> {
    use.begin(endpointId);
    try {
      const link = await linkFor(endpointId, key, open);
      if (closed) {
        await link.close();
        throw new LinksClosedError();
      }
      return await work(link);
    } finally {
      use.end(endpointId);
    }
  }

  const ended = (endpointId: string) => () => use.end(endpointId);

  return {
    use<T>(
      endpointId: string,
      key: string,
      open: () => Promise<L>,
      work: (link: L) => Promise<T>,
    ): Promise<T> {
      // the usual case, an open live link for these settings: straight to it, no promise
      // hops before the publish (one per publish otherwise, a few percent of its CPU)
      const ready = links.get(endpointId);
      if (!closed && ready?.ready?.alive && ready.key === key) {
        use.begin(endpointId);
        let done: Promise<T>;
        try {
          done = work(ready.ready);
        } catch (err) {
          use.end(endpointId);
          return Promise.reject(err);
        }
        return done.finally(ended(endpointId));
      }
      return useSlowly(endpointId, key, open, work);
    },
    async close() {
      closed = true;
      use.stop();
      const held = [...links.values()];
      links.clear();
      await Promise.all(held.map((h) => h.link.then((l) => l.close()).catch(() => {})));
    },
  };
}
