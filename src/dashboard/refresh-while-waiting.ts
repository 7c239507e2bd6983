/**
 * A message page's deliveries while one is still on its way (dashboard and portal): the
 * attributes that make the page's #deliveries refresh itself with htmx, fetched from the
 * same page and swapped in place. Every 2 s while one is pending or in flight (a test
 * event lands in a second or two), every 15 s while one only waits for a retry; not at all
 * once each is delivered, dead, canceled or held by a disabled endpoint.
 */
import { type Html, html } from "./html.ts";

export function refreshWhileWaiting(
  deliveries: readonly { deliveryStatus: string; disabled?: boolean }[],
  selfUrl: string,
): Html | string {
  const moving = deliveries.filter((d) => !d.disabled);
  const soon = moving.some(
    (d) => d.deliveryStatus === "pending" || d.deliveryStatus === "in_flight",
  );
  const later = moving.some((d) => d.deliveryStatus === "failed");
  if (!soon && !later) return "";
  return html` hx-get="${selfUrl}" hx-trigger="every ${soon ? 2 : 15}s" hx-select="#deliveries" hx-swap="outerHTML" data-refresh="${soon ? 2 : 15}"`;
}
