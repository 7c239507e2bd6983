import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { loadConfig } from "../../config.ts";
import { maskedProxyUrl, parseProxyUrl } from "./proxy-tunnel.ts";

describe("parseProxyUrl", () => {
  test("http, https and socks5, with credentials and the schemes' default ports", () => {
    expect(parseProxyUrl("http://u:p%40ss@proxy.example:3128")).toEqual({
      protocol: "http:",
      host: "proxy.example",
      port: 3128,
      username: "u",
      password: "p@ss",
    });
    expect(parseProxyUrl("https://proxy.example").port).toBe(443);
    expect(parseProxyUrl("socks5://[::1]").port).toBe(1080);
    expect(parseProxyUrl("socks5://[::1]").host).toBe("::1");
  });

  test("refuses other schemes, no host, a path or a query", () => {
    for (const bad of [
      "ftp://p:21",
      "socks4://p:1080",
      "http://p:3128/x",
      "http://p?x=1",
      "p:3128",
      "http://",
    ])
      expect(() => parseProxyUrl(bad), bad).toThrow();
  });

  test("masks the password only", () => {
    expect(maskedProxyUrl("socks5://relay:secret@10.0.0.1:1080")).toBe(
      "socks5://relay:***@10.0.0.1:1080",
    );
    expect(maskedProxyUrl("http://10.0.0.1:3128")).toBe("http://10.0.0.1:3128");
  });
});

describe("HOOKRELAY_EGRESS_PROXY and HOOKRELAY_EGRESS_POOLS", () => {
  test("unset: direct, no pools", () => {
    expect(loadConfig({}).egress).toEqual({ proxy: null, pools: {} });
  });

  test("pools from JSON or from a file, each field optional", async () => {
    const json =
      '{"static":{"proxy":"http://10.0.5.10:3128","publicIps":["203.0.113.10"]},"nat":{}}';
    const expected = {
      static: {
        proxy: "http://10.0.5.10:3128",
        localAddress: null,
        publicIps: ["203.0.113.10"],
        description: "",
      },
      nat: { proxy: null, localAddress: null, publicIps: [], description: "" },
    };
    expect(loadConfig({ HOOKRELAY_EGRESS_POOLS: json }).egress.pools).toEqual(expected);
    const dir = await mkdtemp(path.join(tmpdir(), "hookrelay-pools-"));
    try {
      const file = path.join(dir, "pools.json");
      await writeFile(file, json);
      expect(loadConfig({ HOOKRELAY_EGRESS_POOLS: file }).egress.pools).toEqual(expected);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("a malformed setting stops the start with invalid_config", () => {
    const bad: Record<string, string>[] = [
      { HOOKRELAY_EGRESS_PROXY: "ftp://p:21" },
      { HOOKRELAY_EGRESS_POOLS: "{not json" },
      { HOOKRELAY_EGRESS_POOLS: "/no/such/file.json" },
      { HOOKRELAY_EGRESS_POOLS: '{"a b":{}}' },
      { HOOKRELAY_EGRESS_POOLS: '{"a":{"proxy":"gopher://x"}}' },
      { HOOKRELAY_EGRESS_POOLS: '{"a":{"publicIps":"203.0.113.1"}}' },
      { HOOKRELAY_EGRESS_POOLS: '{"a":{"prxy":"http://x:1"}}' },
    ];
    for (const env of bad)
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(
        expect.objectContaining({ code: "invalid_config" }),
      );
  });
});
