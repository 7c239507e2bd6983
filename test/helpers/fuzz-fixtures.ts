/**
 * Real resources for the hostile-input tests to aim at (an app, an endpoint, a message and
 * its delivery, an app key, an event type), the real values of each path parameter, and
 * the placeholders generated bodies use for them. A test re-seeds when a DELETE it sent
 * removed them.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { publicIdsOf } from "../../src/ids-public-key.ts";
import type { Harness } from "./harness.ts";

const V1 = "/api/v1";

export interface Fixtures {
  appId: string;
  appUid: string;
  endpointId: string;
  endpointUid: string;
  msgId: string;
  eventId: string;
  deliveryId: string;
  keyId: string;
  eventType: string;
}

export async function seedFixtures(h: Harness): Promise<Fixtures> {
  const tag = randomBytes(4).toString("hex");
  const app = await h.call("POST", `${V1}/app`, { name: "fuzz", uid: `fuzz-${tag}` });
  const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
    url: "http://127.0.0.1:9/fuzz",
    uid: `fuzz-ep-${tag}`,
  });
  const msg = await h.call("POST", `${V1}/app/${app.body.id}/msg`, {
    eventType: "fuzz",
    eventId: `fuzz-evt-${tag}`,
    payload: { a: 1 },
  });
  const key = await h.call("POST", `${V1}/api-keys`, { role: "app", appId: app.body.id });
  const et = await h.call("PUT", `${V1}/event-type/fuzz.${tag}`, { description: "fuzz" });
  expect([app.status, ep.status, msg.status, key.status, et.status]).toEqual([
    201, 201, 202, 201, 201,
  ]);
  const { rows } = await h.db.pool.query("select id from deliveries where message_id = $1", [
    msg.body.id,
  ]);
  return {
    appId: app.body.id,
    appUid: app.body.uid,
    endpointId: ep.body.id,
    endpointUid: ep.body.uid,
    msgId: msg.body.id,
    eventId: `fuzz-evt-${tag}`,
    deliveryId: (await publicIdsOf(h.db.pool)).format("delivery", rows[0].id),
    keyId: key.body.id,
    eventType: `fuzz.${tag}`,
  };
}

/** The real values for a path parameter: the fuzzer picks one by index. */
export function realValues(fx: Fixtures, param: string): string[] {
  switch (param) {
    case "appId":
      return [fx.appId, fx.appUid];
    case "endpointId":
      return [fx.endpointId, fx.endpointUid];
    case "msgId":
      return [fx.msgId, fx.eventId];
    case "attemptId":
      return ["atmpt_1", "1"];
    case "deliveryId":
      return [fx.deliveryId];
    case "keyId":
      return [fx.keyId];
    case "name":
      return [fx.eventType];
    default:
      return ["static/index.html", "json"];
  }
}

/** A route's path with every parameter set to its first real value. */
export const realPath = (fx: Fixtures, path: string) =>
  path.replace(/:(\w+)/g, (_, p: string) => encodeURIComponent(realValues(fx, p)[0]!));

/** Generated bodies name the fixtures by placeholder; these are replaced when sent. */
export const PLACEHOLDER = { app: "@@APP@@", endpoint: "@@EP@@", delivery: "@@DLV@@" } as const;

export const withFixtures = (text: string, fx: Fixtures) =>
  text
    .replaceAll(PLACEHOLDER.app, fx.appId)
    .replaceAll(PLACEHOLDER.endpoint, fx.endpointId)
    .replaceAll(PLACEHOLDER.delivery, fx.deliveryId);
