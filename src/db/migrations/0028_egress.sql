-- Egress (docs/egress.md): how an endpoint's requests leave. Every column is null for an
-- endpoint that goes out the default way (directly, or through HOOKRELAY_EGRESS_PROXY).

-- A named egress pool of the server's HOOKRELAY_EGRESS_POOLS (a proxy or a local source
-- address, and the public IPs receivers see): the endpoint's own, else its application's.
alter table endpoints add column egress_pool text;
alter table applications add column egress_pool text;

-- The endpoint's own forward proxy (http://, https:// or socks5://): the URL without its
-- password, and the password sealed at rest like signing secrets (security/secret-box.ts),
-- so answers show the proxy with its password masked. It wins over any pool.
alter table endpoints add column proxy_url text;
alter table endpoints add column proxy_secret text;

-- mTLS: the client certificate and its key (PEM), both sealed and never returned; and the
-- CA bundle (PEM) that the receiver's certificate must chain to instead of the system's.
alter table endpoints add column tls_client_cert text;
alter table endpoints add column tls_client_key text;
alter table endpoints add column tls_ca text;
