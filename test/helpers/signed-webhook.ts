/**
 * A test-payload builder: a validly signed Standard Webhooks request (v1 with whsec_
 * secrets through hookrelay's own signer, v1a with Ed25519 private keys), which each test
 * then tampers with one way.
 */
import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { secretKey, signOne } from "../../src/delivery/sign.ts";

export interface SignedWebhook {
  id: string;
  timestamp: number;
  body: string;
  headers: Record<string, string>;
}

export interface SignOptions {
  id?: string;
  /** unix seconds; default now */
  timestamp?: number;
  body?: string;
  /** whsec_ secrets: one v1 signature each */
  secrets?: readonly string[];
  /** Ed25519 private keys: one v1a signature each */
  privateKeys?: readonly KeyObject[];
}

export function signedWebhook(options: SignOptions = {}): SignedWebhook {
  const id = options.id ?? "msg_2p5VhXkQw0sF3tJg9mXbZ1";
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const body = options.body ?? '{"type":"order.paid","data":{"order":1042,"total":99.50}}';
  const signatures = [
    ...(options.secrets ?? []).map((s) => signOne(secretKey(s), id, timestamp, body)),
    ...(options.privateKeys ?? []).map((k) => signV1a(k, id, timestamp, body)),
  ];
  return {
    id,
    timestamp,
    body,
    headers: {
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signatures.join(" "),
    },
  };
}

/** `v1a,<base64 Ed25519 signature of "id.timestamp.body">` */
export function signV1a(privateKey: KeyObject, id: string, timestamp: number, body: string) {
  return `v1a,${sign(null, Buffer.from(`${id}.${timestamp}.${body}`), privateKey).toString("base64")}`;
}

/** A fresh Ed25519 key pair, with the public key as a receiver holds it (whpk_). */
export function ed25519KeyPair(): { privateKey: KeyObject; whpk: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return { privateKey, whpk: whpkOf(publicKey) };
}

export function whpkOf(publicKey: KeyObject): string {
  const { x } = publicKey.export({ format: "jwk" });
  return `whpk_${Buffer.from(x!, "base64url").toString("base64")}`;
}
