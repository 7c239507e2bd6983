/**
 * `npm run build` (scripts/build.js) skips a build whose inputs are those of the dist/ in
 * place (scripts/build-inputs.js), and builds again when any of them changes. Both run on
 * small projects of the same shape in scratch folders, so the real dist/, which other test
 * files run meanwhile, is never touched.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import { buildInputsDigest } from "../scripts/build-inputs.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const UP_TO_DATE = "dist/ is up to date";
const scratches: string[] = [];

afterAll(() => {
  for (const dir of scratches) rmSync(dir, { recursive: true, force: true });
});

/** A scratch project: the build's scripts and tsconfig files, a src/ of `files`. */
function project(files: Record<string, string>) {
  const root = mkdtempSync(path.join(tmpdir(), "hookrelay-build-"));
  scratches.push(root);
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  };
  for (const file of ["scripts/build.js", "scripts/build-inputs.js", "tsconfig.build.json"]) {
    write(file, readFileSync(path.join(ROOT, file), "utf8"));
  }
  // the project's own settings, less its type packages (the build's tsconfig extends it)
  const base = JSON.parse(readFileSync(path.join(ROOT, "tsconfig.json"), "utf8"));
  write(
    "tsconfig.json",
    JSON.stringify({ compilerOptions: { ...base.compilerOptions, types: [] } }),
  );
  write("package.json", '{ "type": "module" }\n');
  for (const [file, text] of Object.entries(files)) write(file, text);
  return { root, write, digest: () => buildInputsDigest(root, "5.0.0") };
}

const SOURCES = {
  "src/cli/main.ts": 'export const version = "one";\n',
  "src/db/migrations/0001_init.sql": "select 1;\n",
  "src/dashboard/static/site.css": "body {}\n",
};

test("the digest follows every input's name and content, not its timestamps", () => {
  const p = project(SOURCES);
  const first = p.digest();
  p.write("src/cli/main.ts", SOURCES["src/cli/main.ts"]);
  expect(p.digest(), "rewritten with the same text").toBe(first);
  expect(buildInputsDigest(p.root, "5.0.1"), "another TypeScript").not.toBe(first);

  const changes: [string, string][] = [
    ["src/cli/main.ts", 'export const version = "two";\n'],
    ["src/db/migrations/0002_more.sql", "select 2;\n"],
    ["src/dashboard/static/site.css", "body { margin: 0 }\n"],
    ["tsconfig.json", "{}"],
    ["tsconfig.build.json", "{}"],
    ["scripts/build.js", "// another build\n"],
    ["scripts/build-inputs.js", "// another digest\n"],
  ];
  const seen = new Set([first]);
  for (const [file, text] of changes) {
    p.write(file, text);
    const digest = p.digest();
    expect(seen.has(digest), `${file} changed`).toBe(false);
    seen.add(digest);
  }
  // a file moved to another name with the same text is a change too
  const q = project({ ...SOURCES, "src/a.ts": "export {};\n" });
  const r = project({ ...SOURCES, "src/b.ts": "export {};\n" });
  expect(q.digest()).not.toBe(r.digest());
});

test("a second build of the same sources is skipped; a changed source, --force or a dist/ without the record builds", () => {
  const p = project(SOURCES);
  const build = (...args: string[]) => {
    const run = spawnSync(process.execPath, [path.join(p.root, "scripts/build.js"), ...args], {
      cwd: p.root,
      encoding: "utf8",
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    return {
      skipped: run.stdout.includes(UP_TO_DATE),
      main: readFileSync(path.join(p.root, "dist/cli/main.js"), "utf8"),
    };
  };
  symlinkSync(path.join(ROOT, "node_modules"), path.join(p.root, "node_modules"));

  expect(build()).toMatchObject({ skipped: false, main: expect.stringContaining('"one"') });
  expect(build().skipped).toBe(true);
  p.write("src/cli/main.ts", 'export const version = "two";\n');
  expect(build()).toMatchObject({ skipped: false, main: expect.stringContaining('"two"') });
  expect(build("--force").skipped).toBe(false);
  rmSync(path.join(p.root, "dist/.build-inputs"));
  expect(build().skipped).toBe(false);
  expect(build().skipped).toBe(true);
}, 120_000);
