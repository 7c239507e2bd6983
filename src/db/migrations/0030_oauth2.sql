-- OAuth2 client credentials (docs/oauth2.md): the endpoint's requests carry a bearer token
-- fetched from its token URL with the client-credentials grant. Null for an endpoint
-- without OAuth2.

-- The settings an answer shows as they are: { tokenUrl, clientId, scope, audience,
-- authMethod } (api/oauth2-input.ts writes it whole, checked).
alter table endpoints add column oauth2 jsonb;

-- The client secret, sealed at rest like signing secrets (security/secret-box.ts); never
-- returned: answers show *** in its place.
alter table endpoints add column oauth2_secret text;
