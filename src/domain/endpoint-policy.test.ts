/**
 * The endpoint-policy table against every consumer that does not need a database: the
 * API's JSON schema, the body's columns and a PUT's resets, the answer, the column map,
 * the CLI's flags, the dashboard's form and the effective value (test/endpoint-policy.test.ts
 * checks the SQL, the OpenAPI document and the form's round trip on a real PostgreSQL).
 */
import { describe, expect, test } from "vitest";
import { endpointIn, endpointPatch, REPLACE_DEFAULTS, toColumns } from "../api/endpoint-input.ts";
import { rangeOf } from "../cli/policy-flags.ts";
import { buildProgram } from "../cli/program.ts";
import { loadConfig } from "../config.ts";
import { endpointBodyOfForm, endpointForm, NEW_ENDPOINT } from "../dashboard/endpoint-form.ts";
import { toHtmlString } from "../dashboard/html.ts";
import {
  type ChoiceField,
  ENDPOINT_POLICY,
  type IntegerField,
  type PolicyColumns,
  type PolicyField,
  type PolicyName,
  policyDefaultsOf,
} from "./endpoint-policy.ts";
import { effective, effectiveSql, policyConflict, policyOut } from "./endpoint-policy-derived.ts";

const TABLE = ENDPOINT_POLICY as readonly PolicyField[];
const INTEGERS = TABLE.filter((f): f is IntegerField => f.sqlType === "integer");
const CHOICES = TABLE.filter((f): f is ChoiceField => f.sqlType === "text");
const namesOf = (fields: readonly PolicyField[]) =>
  fields.flatMap((f) => (f.alias ? [f.api, f.alias] : [f.api]));
const apiNames = namesOf(TABLE);
/** A valid value of each field, distinct per field where it can be: min + i, or a word. */
const sampleOf = (f: PolicyField, i: number) =>
  f.sqlType === "integer" ? f.min + i : f.values[i % f.values.length]!;

describe("the table", () => {
  test("names, columns and flags are unique; a default is the configuration field of the same name", () => {
    expect(new Set(apiNames).size).toBe(apiNames.length);
    expect(new Set(TABLE.map((f) => f.column)).size).toBe(TABLE.length);
    const flags = TABLE.flatMap((f) => (f.cli ? [f.cli.flag] : []));
    expect(new Set(flags).size).toBe(flags.length);
    for (const f of TABLE) {
      expect(f.column).toMatch(/^[a-z_]+$/);
      if (f.sqlType === "integer") expect(f.min).toBeLessThanOrEqual(f.max);
      else expect(new Set(f.values).size, f.api).toBeGreaterThan(1);
      if (f.default) expect(f.default.key).toBe(f.api);
      else expect(f.nullMeans).toBeTruthy();
    }
  });

  test("each default's variable sets that default (config.ts)", () => {
    for (const f of INTEGERS) {
      if (!f.default) continue;
      // (a value no default has, between the default retry base and cap)
      const config = loadConfig({ [f.default.env]: "123457" });
      expect(policyDefaultsOf(config)[f.default.key], f.default.env).toBe(123_457);
    }
    for (const f of CHOICES) {
      if (!f.default) continue;
      // each word, whichever the default is; any other word is a configuration error
      const { env, key } = f.default;
      for (const word of f.values)
        expect(policyDefaultsOf(loadConfig({ [env]: word }))[key], env).toBe(word);
      expect(() => loadConfig({ [env]: "sometimes" })).toThrow(
        `${env} must be ${f.values.join(" or ")}, got "sometimes"`,
      );
    }
  });
});

describe("the API", () => {
  test("the JSON schema has exactly the table's fields, with its bounds or words and a description", () => {
    for (const schema of [endpointIn, endpointPatch]) {
      const props = schema.properties as Record<string, Record<string, unknown>>;
      for (const f of TABLE) {
        for (const name of f.alias ? [f.api, f.alias] : [f.api]) {
          expect(props[name], name).toMatchObject(
            f.sqlType === "integer"
              ? { type: ["integer", "null"], minimum: f.min, maximum: f.max }
              : { type: ["string", "null"], enum: [...f.values, null] },
          );
          expect(props[name]!.description, name).toEqual(expect.any(String));
        }
      }
      // no other property is a nullable integer: every policy field is in the table
      const integers = Object.keys(props).filter(
        (k) => JSON.stringify(props[k]!.type) === '["integer","null"]',
      );
      expect(integers.sort()).toEqual(namesOf(INTEGERS).sort());
    }
  });

  test("a body writes each field to its column, an alias when the name is absent; a PUT resets each", () => {
    const body = Object.fromEntries(TABLE.map((f, i) => [f.api, sampleOf(f, i)]));
    const cols = toColumns({ url: "https://x.example/", ...body }) as Record<string, unknown>;
    for (const [i, f] of TABLE.entries()) expect(cols[f.column], f.api).toBe(sampleOf(f, i));
    for (const f of TABLE.filter((f) => f.alias)) {
      expect((toColumns({ [f.alias!]: 7 }) as Record<string, unknown>)[f.column]).toBe(7);
      expect((toColumns({ [f.api]: 8, [f.alias!]: 7 }) as Record<string, unknown>)[f.column]).toBe(
        8,
      );
    }
    const resets = REPLACE_DEFAULTS as Record<string, unknown>;
    for (const f of TABLE) {
      if (f.put === "reset") expect(resets[f.column], f.api).toBeNull();
      else expect(f.column in resets, f.api).toBe(false);
    }
  });

  test("the answer has each field (and alias) from its column", () => {
    const row = Object.fromEntries(
      TABLE.map((f, i) => [f.column, sampleOf(f, i)]),
    ) as unknown as PolicyColumns;
    const out = policyOut(row) as Record<string, unknown>;
    expect(Object.keys(out).sort()).toEqual([...apiNames].sort());
    for (const [i, f] of TABLE.entries()) {
      expect(out[f.api]).toBe(sampleOf(f, i));
      if (f.alias) expect(out[f.alias]).toBe(sampleOf(f, i));
    }
  });

  test("atLeast: retryCapMs below retryBaseMs in one body is refused with the API's words", () => {
    expect(policyConflict({ retry_base_ms: 10, retry_cap_ms: 5 })).toBe(
      "retryCapMs must be >= retryBaseMs",
    );
    expect(policyConflict({ retry_base_ms: 10, retry_cap_ms: 10 })).toBeNull();
    expect(policyConflict({ retry_cap_ms: 5 })).toBeNull();
    expect(() => toColumns({ retryBaseMs: 10, retryCapMs: 5 })).toThrow(/retryCapMs must be >=/);
  });
});

describe("the CLI", () => {
  test("add and update have each flag with the table's help; update says 'default' resets it", () => {
    const endpoint = buildProgram().commands.find((c) => c.name() === "endpoint")!;
    for (const [verb, suffix] of [
      ["add", ""],
      ["update", ' ("default" resets it)'],
    ] as const) {
      const command = endpoint.commands.find((c) => c.name() === verb)!;
      for (const f of TABLE) {
        if (!f.cli) continue;
        const option = command.options.find((o) => o.flags === f.cli!.flag);
        expect(option, `${verb} ${f.cli.flag}`).toBeDefined();
        expect(option!.description).toBe(f.cli.help + rangeOf(f) + suffix);
      }
    }
  });
});

describe("the dashboard's form", () => {
  const render = (values = NEW_ENDPOINT, policy = true) =>
    toHtmlString(
      endpointForm({
        action: "/x",
        csrfField: "_csrf",
        csrfToken: "t",
        cancelHref: "/",
        values,
        catalog: [],
        error: null,
        policy,
      }),
    );

  test("renders each field with its label, unit, bounds or words and help; the portal's shows none", () => {
    const page = render();
    for (const f of TABLE) {
      if (!f.form) {
        expect(page).not.toContain(`name="${f.api}"`);
        continue;
      }
      if (f.sqlType === "integer")
        expect(page).toContain(
          `<label>${f.form!.label} (${f.form!.unit})<br><input type="number" name="${f.api}" min="${f.min}" max="${f.max}" step="1"`,
        );
      else
        expect(page).toContain(
          `<label>${f.form!.label}<br><select name="${f.api}" data-policy="${f.api}"><option value="" selected>server default</option>${f.values.map((w) => `<option value="${w}">${w}</option>`).join("")}</select>`,
        );
      expect(page).toContain(f.form.help);
    }
    const portal = render(NEW_ENDPOINT, false);
    for (const f of TABLE) expect(portal).not.toContain(`name="${f.api}"`);
  });

  test("a post sends each shown field (empty: null), and nothing when the form did not show them", () => {
    const shown = TABLE.filter((f) => f.form);
    const posted = {
      url: "https://x.example/",
      policyFields: "1",
      ...Object.fromEntries(shown.map((f, i) => [f.api, i === 0 ? "" : String(sampleOf(f, 0))])),
    };
    const body = endpointBodyOfForm(posted);
    for (const [i, f] of shown.entries())
      expect(body[f.api], f.api).toBe(i === 0 ? null : sampleOf(f, 0));
    const { policyFields: _, ...withoutMarker } = posted;
    const plain = endpointBodyOfForm(withoutMarker);
    for (const f of TABLE) expect(f.api in plain, f.api).toBe(false);
  });

  test("an endpoint's values fill the fields; a set field opens the section", () => {
    const values = { ...NEW_ENDPOINT, policy: { timeoutMs: "2500" } };
    const page = render(values);
    expect(page).toMatch(/<details class="settings" open><summary>Delivery policy/);
    expect(page).toContain('name="timeoutMs" min="100" max="300000" step="1" value="2500"');
    expect(render()).toMatch(/<details class="settings"><summary>Delivery policy/);
    const skip = render({ ...NEW_ENDPOINT, policy: { whileDisabled: "skip" } });
    expect(skip).toMatch(/<details class="settings" open>/);
    expect(skip).toContain(
      '<option value="">server default</option><option value="hold">hold</option><option value="skip" selected>skip</option>',
    );
  });
});

describe("the effective value", () => {
  const defaults = policyDefaultsOf(loadConfig({}));

  test("TypeScript: the endpoint's own, else the process default", () => {
    for (const [i, f] of TABLE.entries()) {
      if (!f.default) continue;
      const name = f.api as Extract<PolicyName, keyof typeof defaults>;
      const own = sampleOf(f, i + 1);
      expect(effective({ [name]: own }, defaults, name)).toBe(own);
      expect(effective({ [name]: null }, defaults, name)).toBe(defaults[name]);
      expect(effective({}, defaults, name)).toBe(defaults[name]);
    }
  });

  test("SQL: the column, its fallback column, the default's parameter", () => {
    expect(effectiveSql("e", "maxInFlight")).toBe(
      "coalesce(e.max_in_flight, $defaultMaxInFlight::integer)",
    );
    expect(effectiveSql("e", "cooldownMs", "$cooldownMs")).toBe(
      "coalesce(e.cooldown_ms, $cooldownMs::integer)",
    );
    expect(effectiveSql("e", "ratePerSecond")).toBe("coalesce(e.rate_per_second, e.throttle_rate)");
    expect(effectiveSql("r", "ratePerHour")).toBe("r.rate_per_hour");
    expect(effectiveSql("e", "whileDisabled")).toBe(
      "coalesce(e.while_disabled, $defaultWhileDisabled::text)",
    );
  });
});
