-- Trace context (docs/telemetry.md, "Traces").
--
-- messages.traceparent: the W3C traceparent the message's deliveries continue: the ingest
-- span's when tracing is on, else the producer's as it gave it (API header or the
-- library's send() option), checked and in version-00 form; null when there was none. The
-- attempts' spans are its children, and an endpoint that propagates the trace sends its
-- receiver a child of it.
alter table messages add column traceparent text;

-- endpoints.propagate_trace on: each attempt sends the receiver a `traceparent` header (the
-- attempt's own span context, a child of the message's); off (null): no header.
alter table endpoints
  add column propagate_trace text
    constraint endpoints_propagate_trace_check check (propagate_trace in ('off', 'on'));
