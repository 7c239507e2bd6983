-- Event types (Svix's resource): a catalogue of the events producers send, with optional
-- JSON schemas. Deleting one archives it (messages keep their event type).
create table event_types (
  name text collate "C" primary key,
  description text not null,
  archived boolean not null default false,
  deprecated boolean not null default false,
  -- the schemas as the operator sent them (text: kept exactly, never re-serialized)
  schemas text,
  group_name text,
  feature_flags text[],
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
