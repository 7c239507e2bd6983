/**
 * The guard at save time (checkUrl) and at connect time (the undici connector). Real traffic
 * only ever goes to 127.0.0.1; every other address comes from an injected lookup, and a
 * refused connection never dials.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { buildConnector } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import { ConfigError, HookRelayError } from "../errors.ts";
import { makeGuardedConnector } from "./guarded-connector.ts";
import {
  type HostLookup,
  isSsrfBlockedError,
  makeGuardedAgent,
  makeSsrfGuard,
  SSRF_BLOCKED_CODE,
  SsrfBlockedError,
} from "./ssrf-guard.ts";

/** A lookup answering from a table; unknown names fail like the system resolver. */
function fakeDns(table: Record<string, readonly string[]>) {
  return vi.fn<HostLookup>(async (host) => {
    const answer = table[host.toLowerCase()];
    if (!answer)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return answer;
  });
}

const noLookup: HostLookup = async (host) => {
  throw new Error(`lookup(${host}) must not be called`);
};

async function refusal(promise: Promise<unknown>): Promise<SsrfBlockedError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SsrfBlockedError);
  return err as SsrfBlockedError;
}

describe("checkUrl (save time)", () => {
  const guard = makeSsrfGuard({ allowlist: [], lookup: noLookup });

  test.each([
    ["http://2130706433/", "127.0.0.1"],
    ["http://0x7f.0x0.0x0.0x1/", "127.0.0.1"],
    ["http://0x7f000001/", "127.0.0.1"],
    ["http://0177.0.0.1/", "127.0.0.1"],
    ["http://127.1/", "127.0.0.1"],
    ["http://127.0.1:8080/", "127.0.0.1"],
    ["http://127.0.0.1./", "127.0.0.1"],
    ["http://%31%32%37.0.0.1/", "127.0.0.1"],
    ["http://１２７.0.0.1/", "127.0.0.1"],
    ["http://0/", "0.0.0.0"],
    ["http://[::]/", "::"],
    ["http://[::1]:3000/", "::1"],
    ["http://[::ffff:127.0.0.1]/", "::ffff:7f00:1"],
    ["http://[::ffff:7f00:1]/", "::ffff:7f00:1"],
    ["http://[::127.0.0.1]/", "::7f00:1"],
    ["http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe"],
    ["http://[64:ff9b:1::a9fe:a9fe]/", "64:ff9b:1::a9fe:a9fe"],
    ["http://[2002:7f00:1::]/", "2002:7f00:1::"],
    ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "2001:0:4136:e378:8000:63bf:80ff:fffe"],
    ["http://[fe80::1]/", "fe80::1"],
    ["http://[fd00:ec2::254]/latest/meta-data", "fd00:ec2::254"],
    ["http://169.254.169.254/latest/meta-data", "169.254.169.254"],
    ["https://169.254.169.254:443/computeMetadata/v1/", "169.254.169.254"],
    ["http://100.100.100.200/latest/meta-data", "100.100.100.200"],
    ["http://10.0.0.1/", "10.0.0.1"],
    ["http://192.168.1.1/", "192.168.1.1"],
    ["http://172.31.255.255/", "172.31.255.255"],
    ["http://224.0.0.1/", "224.0.0.1"],
    ["http://255.255.255.255/", "255.255.255.255"],
  ])("%s is refused without a lookup, naming %s", async (url, address) => {
    const err = await refusal(guard.checkUrl(url));
    expect(err.code).toBe(SSRF_BLOCKED_CODE);
    expect(err.target).toBe(address);
    expect(err.message).toContain(address);
    expect(err.reason.length).toBeGreaterThan(0);
  });

  test("the metadata address is named as such", async () => {
    const err = await refusal(guard.checkUrl("http://169.254.169.254/latest/meta-data"));
    expect(err.message).toBe(
      "refusing to deliver to 169.254.169.254: cloud metadata service (169.254.169.254/32)",
    );
  });

  test("an IPv6 zone id is refused (the URL parser rejects it; undici could not dial it)", async () => {
    await refusal(guard.checkUrl("http://[fe80::1%25eth0]/"));
    await refusal(guard.checkUrl("http://[fe80::1%eth0]/"));
  });

  test.each([
    "ftp://example.com/",
    "file:///etc/passwd",
    "gopher://example.com:70/",
    "javascript:alert(1)",
    "data:text/plain,hi",
    "ws://example.com/",
    "HTTPX://example.com/",
  ])("scheme of %s is refused", async (url) => {
    const err = await refusal(guard.checkUrl(url));
    expect(err.reason).toContain("only http and https");
  });

  test.each(["not a url", "/relative/path", "http://", "http://[::1/"])(
    "%j is refused as invalid",
    async (url) => {
      const err = await refusal(guard.checkUrl(url));
      expect(err.reason).toContain("not a valid absolute URL");
    },
  );

  test.each([
    "http://localhost/",
    "http://LOCALHOST:8080/",
    "http://localhost./",
    "http://api.localhost/",
    "https://a.b.LocalHost./",
  ])("%s is refused without a lookup", async (url) => {
    const err = await refusal(guard.checkUrl(url));
    expect(err.reason).toContain("localhost");
  });

  test("a name is refused if ANY of its addresses is blocked", async () => {
    const lookup = fakeDns({
      "mixed.example": ["93.184.215.14", "10.0.0.7"],
      "mapped.example": ["::ffff:192.168.0.1"],
      "meta.example": ["2606:4700::1", "169.254.169.254"],
      "public.example": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    });
    const g = makeSsrfGuard({ allowlist: [], lookup });
    const err = await refusal(g.checkUrl("https://mixed.example/hook?token=secret"));
    expect(err.message).toBe(
      "refusing to deliver to mixed.example: it resolves to 10.0.0.7, RFC 1918 private network (10.0.0.0/8)",
    );
    expect(err.message).not.toContain("secret"); // never the path or query
    await refusal(g.checkUrl("https://mapped.example/"));
    await refusal(g.checkUrl("https://meta.example/"));
    await expect(g.checkUrl("https://public.example/hook")).resolves.toBeUndefined();
    expect(lookup).toHaveBeenCalledWith("public.example");
  });

  test("public literals pass", async () => {
    for (const url of [
      "http://8.8.8.8/",
      "https://1.1.1.1:8443/x",
      "https://[2606:4700:4700::1111]/",
      "http://[::ffff:8.8.8.8]/",
      "http://[64:ff9b::808:808]/",
    ]) {
      await expect(guard.checkUrl(url), url).resolves.toBeUndefined();
    }
  });

  test("a resolver answer that is not an address is refused", async () => {
    const g = makeSsrfGuard({ allowlist: [], lookup: async () => ["not-an-ip"] });
    const err = await refusal(g.checkUrl("http://odd.example/"));
    expect(err.reason).toContain("not an IP address");
  });

  test("a name that does not resolve (yet) is accepted: the connect-time check decides", async () => {
    const g = makeSsrfGuard({ allowlist: [], lookup: fakeDns({}) });
    await expect(g.checkUrl("https://not-yet.example/")).resolves.toBeUndefined();
    const empty = makeSsrfGuard({ allowlist: [], lookup: async () => [] });
    await expect(empty.checkUrl("https://empty.example/")).resolves.toBeUndefined();
    await expect(empty.vetHost("empty.example")).rejects.toMatchObject({ code: "ENOTFOUND" });
    const slow = makeSsrfGuard({
      allowlist: [],
      lookup: () => new Promise(() => {}),
      lookupTimeoutMs: 20,
    });
    await expect(slow.checkUrl("https://slow.example/")).resolves.toBeUndefined();
  });

  test("a raw host ending in a number that is not an IPv4 address is refused", async () => {
    const g = makeSsrfGuard({ allowlist: [], lookup: noLookup });
    for (const host of ["1.2.3.09", "256.1.1.1", "foo.0x7f", "1.2.3.4.5"]) {
      await refusal(g.vetHost(host));
    }
  });
});

describe("allow-list", () => {
  test("an address inside an allow-listed CIDR passes, others are still refused", async () => {
    const lookup = fakeDns({
      "db.internal": ["10.1.2.3"],
      "split.internal": ["10.1.2.3", "192.168.1.1"],
    });
    const g = makeSsrfGuard({ allowlist: ["127.0.0.0/8", " 10.0.0.0/8 ", "fd00::/8"], lookup });
    await expect(g.checkUrl("http://127.0.0.1:8080/")).resolves.toBeUndefined();
    await expect(g.checkUrl("http://127.1/")).resolves.toBeUndefined();
    await expect(g.checkUrl("http://[::ffff:127.0.0.1]/")).resolves.toBeUndefined();
    await expect(g.checkUrl("http://[fd12::1]/")).resolves.toBeUndefined();
    await expect(g.checkUrl("http://db.internal/")).resolves.toBeUndefined();
    await refusal(g.checkUrl("http://split.internal/"));
    await refusal(g.checkUrl("http://[::1]/"));
    await refusal(g.checkUrl("http://169.254.169.254/"));
    expect(g.addressRefusal("10.9.9.9")).toBeNull();
    expect(g.addressRefusal("192.168.0.1")).toContain("RFC 1918");
  });

  test("an allow-listed host name passes whatever it resolves to, matched case-insensitively", async () => {
    const g = makeSsrfGuard({ allowlist: ["Receiver.Internal", "localhost"], lookup: noLookup });
    await expect(g.checkUrl("http://receiver.internal/hook")).resolves.toBeUndefined();
    await expect(g.checkUrl("http://RECEIVER.internal./hook")).resolves.toBeUndefined();
    await expect(g.checkUrl("http://localhost:9000/")).resolves.toBeUndefined();
    await expect(g.vetHost("receiver.internal")).resolves.toEqual({ kind: "allowlisted-name" });
    // Only the exact name: no subdomains, and ftp is still ftp.
    await refusal(g.checkUrl("http://api.localhost/"));
    await refusal(g.checkUrl("ftp://receiver.internal/"));
  });

  test.each([
    "10.0.0.0/33",
    "::1/129",
    "10.1/16",
    "127.1",
    "0x7f000001",
    "10.0.0.0/x",
    "http://example.com",
    "a b",
  ])("entry %j is a configuration error", (entry) => {
    expect(() => makeSsrfGuard({ allowlist: [entry] })).toThrow(ConfigError);
  });
});

describe("SsrfBlockedError", () => {
  test("has a stable code and is recognised through wrapping", () => {
    const err = new SsrfBlockedError("127.0.0.1", "loopback");
    expect(err).toBeInstanceOf(HookRelayError);
    expect(err.name).toBe("SsrfBlockedError");
    expect(isSsrfBlockedError(err)).toBe(true);
    expect(isSsrfBlockedError(new Error("wrapped", { cause: err }))).toBe(true);
    expect(
      isSsrfBlockedError(Object.assign(new Error("copied"), { code: SSRF_BLOCKED_CODE })),
    ).toBe(true);
    expect(isSsrfBlockedError(Object.assign(new Error("dns"), { code: "ENOTFOUND" }))).toBe(false);
    expect(isSsrfBlockedError(null)).toBe(false);
    expect(isSsrfBlockedError("url_not_allowed")).toBe(false);
  });
});

describe("connector (connect time)", () => {
  let server: http.Server;
  let port = 0;
  let connections = 0;
  const agents: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.setHeader("content-type", "text/plain");
      res.end(`ok ${req.headers.host}`);
    });
    server.on("connection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
    server.closeAllConnections();
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  function agentFor(allowlist: string[], lookup: HostLookup = noLookup) {
    const agent = makeGuardedAgent(makeSsrfGuard({ allowlist, lookup }), { connectTimeout: 2_000 });
    agents.push(agent);
    return agent;
  }

  async function post(agent: ReturnType<typeof agentFor>, origin: string) {
    const res = await agent.request({ origin, path: "/hook", method: "POST", body: "{}" });
    return { status: res.statusCode, body: await res.body.text() };
  }

  test("a request to 127.0.0.1 is refused with the SSRF error and never dials", async () => {
    const before = connections;
    const err = await refusal(post(agentFor([]), `http://127.0.0.1:${port}`));
    expect(err.code).toBe(SSRF_BLOCKED_CODE);
    expect(err.message).toContain("127.0.0.1");
    expect(connections).toBe(before);
  });

  test("the same request succeeds when 127.0.0.1/32 is allow-listed", async () => {
    await expect(post(agentFor(["127.0.0.1/32"]), `http://127.0.0.1:${port}`)).resolves.toEqual({
      status: 200,
      body: `ok 127.0.0.1:${port}`,
    });
  });

  test("IP literals in other forms are vetted too (undici's lookup never sees them)", async () => {
    const agent = agentFor(["10.0.0.0/8"]);
    await refusal(post(agent, `http://[::1]:${port}`));
    await refusal(post(agent, `http://[::ffff:127.0.0.1]:${port}`));
    await refusal(post(agent, `http://0x7f.1:${port}`));
    await refusal(post(agent, `http://localhost:${port}`));
  });

  test("DNS rebinding: a name checked as public at save time is refused when it later answers 127.0.0.1", async () => {
    let answer = ["93.184.215.14"];
    const lookup = vi.fn<HostLookup>(async () => answer);
    const guard = makeSsrfGuard({ allowlist: [], lookup });
    await expect(guard.checkUrl(`http://rebind.test:${port}/hook`)).resolves.toBeUndefined();
    answer = ["127.0.0.1"];
    const agent = makeGuardedAgent(guard);
    agents.push(agent);
    const before = connections;
    const err = await refusal(post(agent, `http://rebind.test:${port}`));
    expect(err.message).toContain("rebind.test: it resolves to 127.0.0.1, loopback");
    expect(connections).toBe(before);
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  test("a name whose lookup answers [public, blocked] is refused at connect time without checkUrl", async () => {
    const lookup = fakeDns({ "mixed.test": ["93.184.215.14", "169.254.169.254"] });
    const err = await refusal(post(agentFor([], lookup), `http://mixed.test:${port}`));
    expect(err.reason).toContain("169.254.169.254");
  });

  test("an allowed name is dialled at the checked address, with no second lookup", async () => {
    // hook.test does not exist in real DNS (.test is reserved), so reaching the server proves
    // the connector dialled the address the injected lookup answered.
    const lookup = fakeDns({ "hook.test": ["127.0.0.1"] });
    const agent = agentFor(["127.0.0.0/8"], lookup);
    await expect(post(agent, `http://hook.test:${port}`)).resolves.toEqual({
      status: 200,
      body: `ok hook.test:${port}`,
    });
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  test("a refused first address falls through to the next checked one", async () => {
    // Nothing listens on 127.0.0.2 (the server is bound to 127.0.0.1): ECONNREFUSED.
    const lookup = fakeDns({ "two.test": ["127.0.0.2", "127.0.0.1"] });
    const agent = agentFor(["127.0.0.0/8"], lookup);
    await expect(post(agent, `http://two.test:${port}`)).resolves.toMatchObject({ status: 200 });
  });

  test("resolver failures keep their code so the sender can call them DNS errors", async () => {
    const err = await post(agentFor([], fakeDns({})), `http://nowhere.test:${port}`).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "ENOTFOUND" });
    expect(isSsrfBlockedError(err)).toBe(false);
  });

  test("guard.connector works as an Agent connect option by itself", async () => {
    const { Agent } = await import("undici");
    const guard = makeSsrfGuard({ allowlist: [] });
    const agent = new Agent({ connect: guard.connector });
    agents.push(agent);
    await refusal(post(agent, `http://127.0.0.1:${port}`));
  });
});

describe("connector options handed to undici's connector", () => {
  type Options = buildConnector.Options;

  function spy(guardOptions: { allowlist: string[]; lookup?: HostLookup }) {
    const calls: Options[] = [];
    const inner: buildConnector.connector = (options, callback) => {
      calls.push(options);
      callback(new Error("spy does not dial"), null);
    };
    const connector = makeGuardedConnector(makeSsrfGuard(guardOptions), inner);
    const connect = (options: Options) =>
      new Promise<Error | null>((resolve) => connector(options, (...args) => resolve(args[0])));
    return { calls, connect };
  }

  test("https keeps the original name for SNI while dialling the checked IP", async () => {
    const { calls, connect } = spy({
      allowlist: ["127.0.0.0/8"],
      lookup: fakeDns({ "api.test": ["127.0.0.9"] }),
    });
    await connect({
      protocol: "https:",
      hostname: "api.test",
      host: "api.test:8443",
      port: "8443",
    });
    await connect({
      protocol: "https:",
      hostname: "api.test",
      host: "api.test",
      port: "",
      servername: "api.test",
    });
    expect(calls.map((c) => [c.hostname, c.servername, c.host])).toEqual([
      ["127.0.0.9", "api.test", "api.test:8443"],
      ["127.0.0.9", "api.test", "api.test"],
    ]);
  });

  test("an IP literal gets no SNI and is dialled in canonical form", async () => {
    const { calls, connect } = spy({ allowlist: ["127.0.0.0/8"] });
    await connect({
      protocol: "https:",
      hostname: "::ffff:127.0.0.1",
      host: "[::ffff:127.0.0.1]",
      port: "443",
      servername: "",
    });
    expect(calls[0]).toMatchObject({ hostname: "::ffff:7f00:1" });
    expect(calls[0]?.servername).toBeFalsy();
  });

  test("an allow-listed name is handed over untouched", async () => {
    const { calls, connect } = spy({ allowlist: ["receiver.internal"] });
    const options = {
      protocol: "https:",
      hostname: "receiver.internal",
      host: "receiver.internal",
      port: "443",
    };
    await connect(options);
    expect(calls).toEqual([options]);
  });

  test("a refused host never reaches the inner connector", async () => {
    const { calls, connect } = spy({ allowlist: [] });
    const err = await connect({
      protocol: "http:",
      hostname: "169.254.169.254",
      host: "169.254.169.254",
      port: "",
    });
    expect(isSsrfBlockedError(err)).toBe(true);
    expect(calls).toEqual([]);
  });

  test("at most MAX_ADDRESSES_TRIED addresses are tried, and only on a connect failure", async () => {
    const many = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"];
    const refused = Object.assign(new Error("refused"), { code: "ECONNREFUSED" });
    const calls: string[] = [];
    const inner =
      (code: Error): buildConnector.connector =>
      (options, callback) => {
        calls.push(options.hostname);
        callback(code, null);
      };
    const guard = makeSsrfGuard({
      allowlist: ["127.0.0.0/8"],
      lookup: fakeDns({ "many.test": many }),
    });
    const run = (err: Error) =>
      new Promise<Error | null>((resolve) =>
        makeGuardedConnector(guard, inner(err))(
          { protocol: "http:", hostname: "many.test", host: "many.test", port: "" },
          (...args) => resolve(args[0]),
        ),
      );
    expect(await run(refused)).toBe(refused);
    expect(calls).toEqual(many.slice(0, 4));
    calls.length = 0;
    const tls = Object.assign(new Error("bad cert"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" });
    expect(await run(tls)).toBe(tls);
    expect(calls).toEqual(["127.0.0.1"]);
  });
});
