import { describe, expect, test } from "vitest";
import {
  BrokerUrlError,
  destinationKindOf,
  parseBrokerUrl,
  shownBrokerUrl,
  splitPassword,
} from "./broker-target.ts";

describe("destinationKindOf", () => {
  test("the scheme names the kind; others are null", () => {
    expect(destinationKindOf("https://x.example/h")).toBe("http");
    expect(destinationKindOf("AMQP://h")).toBe("amqp");
    expect(destinationKindOf("amqps://h")).toBe("amqp");
    expect(destinationKindOf("nats://h:4222")).toBe("nats");
    expect(destinationKindOf("tls://h:4222")).toBe("nats");
    expect(destinationKindOf("kafka://h")).toBeNull();
    expect(destinationKindOf("no scheme")).toBeNull();
  });
});

describe("parseBrokerUrl", () => {
  test("AMQP: vhost from the path, defaults for port, exchange and routing key", () => {
    expect(parseBrokerUrl("amqp://u:p%40ss@mq.example/%2Fprod")).toEqual({
      kind: "amqp",
      tls: false,
      hostname: "mq.example",
      port: 5672,
      username: "u",
      password: "p@ss",
      vhost: "/prod",
      exchange: "",
      routingKey: null,
    });
    const t = parseBrokerUrl("amqps://mq.example?exchange=ev&routingKey=a.b", "given");
    expect(t).toMatchObject({ tls: true, port: 5671, vhost: "/", exchange: "ev" });
    expect(t).toMatchObject({ routingKey: "a.b", username: null, password: "given" });
  });

  test("NATS: subject and stream, or the event type's subject", () => {
    expect(parseBrokerUrl("nats://n.example?subject=a.b&stream=S")).toEqual({
      kind: "nats",
      tls: false,
      hostname: "n.example",
      port: 4222,
      username: null,
      password: null,
      subject: "a.b",
      stream: "S",
    });
    expect(parseBrokerUrl("nats://u:p@n.example:1")).toMatchObject({ subject: null, port: 1 });
    expect(parseBrokerUrl("tls://u@n.example?subject=a")).toMatchObject({
      kind: "nats",
      tls: true,
      port: 4222,
      subject: "a",
    });
  });

  test.each([
    ["http://x.example", /amqp, amqps, nats or tls/],
    ["amqp://h?queue=q", /not "queue"/],
    ["amqp://h?exchange=a&exchange=b", /given twice/],
    [`amqp://h?exchange=${"x".repeat(256)}`, /longer than 255/],
    ["nats://h/a", /no path/],
    ["nats://h?subject=a..b", /dot-separated/],
    ["nats://h?subject=a.>", /wildcards/],
    ["nats://h?stream=a/b", /stream must be a name/],
    ["amqp://h/#x", /fragment/],
    ["not a url", /valid absolute URL/],
  ])("%s is refused", (url, why) => {
    expect(() => parseBrokerUrl(url)).toThrow(BrokerUrlError);
    expect(() => parseBrokerUrl(url)).toThrow(why);
  });
});

describe("the password kept apart", () => {
  test("splitPassword takes it out; shownBrokerUrl masks it", () => {
    const { url, password } = splitPassword("amqp://user:s%3Acret@h:5672/v?exchange=e");
    expect(url).toBe("amqp://user@h:5672/v?exchange=e");
    expect(password).toBe("s:cret");
    expect(shownBrokerUrl(url, true)).toBe("amqp://user:***@h:5672/v?exchange=e");
    expect(shownBrokerUrl(url, false)).toBe(url);
    expect(splitPassword("nats://h:4222")).toEqual({ url: "nats://h:4222", password: null });
  });
});
