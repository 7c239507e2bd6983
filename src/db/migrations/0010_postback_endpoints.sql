-- Postback endpoints (README.md, Postbacks): how a delivery is sent, beside where to.
--   method        POST (the default), GET (no body) or PUT
--   body_format   json: the payload as sent; form: its top-level fields, form-encoded
--   url_token     the value of {$token} in a URL template, sealed like signing secrets
--                 (src/security/secret-box.ts); null when the endpoint has none
--   missing_fields  fail: a payload without a field the URL template needs is a dead
--                 letter (error kind missing_field); empty: the field renders as ""
--   success_rule  null, or what a 2xx response body must (not) contain to count as
--                 delivered, and whether a body failure is retried (src/delivery/success-rule.ts)
-- Constant defaults: PostgreSQL adds these columns without rewriting the table.
alter table endpoints
  add column method text not null default 'POST'
    constraint endpoints_method_check check (method in ('POST', 'GET', 'PUT')),
  add column body_format text not null default 'json'
    constraint endpoints_body_format_check check (body_format in ('json', 'form')),
  add column url_token text,
  add column missing_fields text not null default 'fail'
    constraint endpoints_missing_fields_check check (missing_fields in ('fail', 'empty')),
  add column success_rule jsonb;
