import pg from "pg";

/**
 * Runs `fn` on a client opened for a few statements, then closes it. Its failures reach
 * the caller as rejections of connect() and query(). When the server ends the connection
 * after connect (a failover, haproxy cutting the sessions of a server it marked down), pg
 * also emits an 'error' event, and an 'error' event nobody listens to ends the process:
 * this client's is listened to and dropped, since the rejection already carries it.
 */
export async function withClient<T>(
  config: pg.ClientConfig,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client(config);
  client.on("error", () => undefined);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}
