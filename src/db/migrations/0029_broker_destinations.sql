-- Destinations beyond HTTP (docs/destinations.md): an endpoint delivers over HTTP (the
-- default), to a RabbitMQ exchange (AMQP 0-9-1 with publisher confirms) or to a NATS
-- JetStream subject. The kind follows the scheme of the endpoint's url (http, https; amqp,
-- amqps; nats) and is stored so the claim and the worker need not parse it.
alter table endpoints add column destination_kind text not null default 'http'
  check (destination_kind in ('http', 'amqp', 'nats'));

-- A broker URL's password, sealed at rest like signing secrets (security/secret-box.ts);
-- endpoints.url keeps the URL without it, so no answer, attempt row or log line can carry
-- it. Null: no password (HTTP endpoints never have one).
alter table endpoints add column destination_secret text;

-- The transport's own detail of an attempt (domain/attempt-outcome.ts), for transports
-- whose detail is not an HTTP status: a broker's exchange or subject, its confirm or ack,
-- the stream sequence. Null for HTTP attempts: their status stays in status_code, which
-- the listings and filters read.
alter table attempts add column detail jsonb;
