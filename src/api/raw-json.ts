/**
 * JSON responses that embed stored JSON text verbatim (message payloads), so what the API
 * shows is byte for byte what the producer sent. `raw(text)` returns a placeholder that
 * `stringifyWithRaw` swaps for the text after serializing everything else.
 */
export interface RawSlots {
  raw(text: string): string;
  stringify(value: unknown): string;
}

export function rawSlots(): RawSlots {
  const texts: string[] = [];
  return {
    raw(text) {
      texts.push(text);
      return `\u0000raw:${texts.length - 1}\u0000`;
    },
    stringify(value) {
      return JSON.stringify(value).replace(
        /"\\u0000raw:(\d+)\\u0000"/g,
        (_, i) => texts[Number(i)]!,
      );
    },
  };
}
