/**
 * A response body as people will read it, from the bytes a stranger sent
 * (docs/delivery.md, Response bodies). Whatever a receiver answers, what comes out is
 * text PostgreSQL can store and a page can show:
 *
 * - UTF-8 text without NUL bytes is kept as it is (a character cut by the read limit is
 *   dropped, not mangled);
 * - a compressed body (`Content-Encoding` gzip, deflate or br) is decompressed, at most
 *   MAX_RESPONSE_READ_BYTES of output (a decompression bomb stops there), and then read as
 *   above; one that does not decompress, or an encoding hookrelay does not know, is
 *   described instead;
 * - anything else (invalid UTF-8, a NUL byte: an image, a protobuf, a gzip stream sent
 *   without its header) is described: `[binary body: 1,234 bytes; starts (hex) 89504e47...]`.
 *
 * hookrelay asks for no compression (it sends no Accept-Encoding), so only a receiver that
 * ignores that sends a compressed answer; it is still read, since trackers' success rules
 * look at the text.
 */
import { isUtf8 } from "node:buffer";
import zlib from "node:zlib";

/** Hex bytes a binary body's description shows. */
const HEX_PREFIX_BYTES = 32;

/**
 * The body as text, or null when it is empty. `truncated`: the read stopped at its limit
 * (the body may go on). `contentEncoding`: the response's Content-Encoding header.
 */
export async function readableBody(
  bytes: Buffer,
  truncated: boolean,
  contentEncoding: string | undefined,
  limit: number,
): Promise<string | null> {
  if (bytes.length === 0) return null;
  const encoding = contentEncoding?.trim().toLowerCase() ?? "";
  if (encoding === "" || encoding === "identity") return bodyText(bytes, truncated);
  const decoder = DECODERS[encoding];
  if (decoder === undefined) {
    return describeBinary(bytes, truncated, `${printable(encoding)}-encoded body`);
  }
  try {
    const decoded = await decodeCapped(bytes, decoder, limit);
    if (decoded.bytes.length === 0) return null;
    return bodyText(decoded.bytes, decoded.truncated || truncated);
  } catch {
    return describeBinary(bytes, truncated, `${encoding}-encoded body that did not decompress`);
  }
}

/** UTF-8 text as it is; anything else described as binary. */
export function bodyText(bytes: Buffer, truncated: boolean): string {
  const whole = truncated ? bytes.subarray(0, utf8Boundary(bytes)) : bytes;
  if (!isUtf8(whole) || whole.includes(0)) return describeBinary(bytes, truncated, "binary body");
  return whole.toString("utf8");
}

function describeBinary(bytes: Buffer, truncated: boolean, what: string): string {
  const size = `${truncated ? "more than " : ""}${bytes.length.toLocaleString("en-US")} bytes`;
  const hex = bytes.subarray(0, HEX_PREFIX_BYTES).toString("hex");
  const more = bytes.length > HEX_PREFIX_BYTES ? "..." : "";
  return `[${what}: ${size}; starts (hex) ${hex}${more}]`;
}

/**
 * Where the last whole UTF-8 character of a cut body ends: a lead byte whose character
 * the cut left incomplete is dropped with its continuation bytes.
 */
function utf8Boundary(bytes: Buffer): number {
  let end = bytes.length;
  let back = 0;
  // at most 3 continuation bytes (10xxxxxx) follow a lead byte
  while (back < 3 && end - back - 1 >= 0 && ((bytes[end - back - 1] ?? 0) & 0xc0) === 0x80) back++;
  const leadAt = end - back - 1;
  if (leadAt < 0) return end;
  const lead = bytes[leadAt] ?? 0;
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (length > back + 1) end = leadAt;
  return end;
}

/** An encoding name as a description may show it: printable ASCII, at most 32 characters. */
function printable(name: string): string {
  return name.replace(/[^\x21-\x7e]/g, "?").slice(0, 32);
}

type Decoder = () => zlib.Gunzip | zlib.Inflate | zlib.InflateRaw | zlib.BrotliDecompress;

// The flush modes let a stream cut by the read limit decompress as far as it goes.
const SYNC_FLUSH = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
const DECODERS: Record<string, Decoder> = Object.assign(Object.create(null), {
  gzip: () => zlib.createGunzip(SYNC_FLUSH),
  "x-gzip": () => zlib.createGunzip(SYNC_FLUSH),
  // RFC 9110 deflate is zlib-wrapped; createUnzip would not take a raw stream either
  deflate: () => zlib.createInflate(SYNC_FLUSH),
  br: () => zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }),
});

/** Decompresses `input`, keeping at most `limit` bytes of output. */
function decodeCapped(
  input: Buffer,
  make: Decoder,
  limit: number,
): Promise<{ bytes: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const stream = make();
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (truncated: boolean) => {
      if (done) return;
      done = true;
      const bytes = Buffer.concat(chunks, size);
      resolve({ bytes: truncated ? bytes.subarray(0, limit) : bytes, truncated });
    };
    stream.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) {
        finish(true);
        stream.destroy();
      }
    });
    stream.once("end", () => finish(false));
    stream.once("error", (err) => {
      if (done) return;
      done = true;
      reject(err);
    });
    stream.end(input);
  });
}
