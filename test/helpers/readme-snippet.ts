/**
 * Runs a code example of README.md as a test, so the README cannot drift from what works.
 * The example is found by a text it contains, its TypeScript types are stripped (the
 * `typescript` package's transpileModule), and its import lines become lookups in the
 * modules the test hands over, so "hookrelay/receiver" can be the source under test.
 */
import { readFileSync } from "node:fs";
import ts from "typescript";

const README = new URL("../../README.md", import.meta.url);

/** The one ```ts block of README.md that contains `marker`. */
export function readmeBlock(marker: string): string {
  const blocks = [...readFileSync(README, "utf8").matchAll(/^```ts\n([\s\S]*?)^```$/gm)]
    .map((m) => m[1]!)
    .filter((code) => code.includes(marker));
  if (blocks.length !== 1) {
    throw new Error(`README.md has ${blocks.length} ts blocks containing ${marker}, not one`);
  }
  return blocks[0]!;
}

/**
 * Evaluates a README block and returns the values of `names`, top-level bindings of the
 * block. Its imports are taken from `modules`, module namespaces by specifier (a default
 * import reads `.default`); `globals` stand in for globals it reads
 * (e.g. a `process` with the env it expects, a `console` that records).
 */
export function runReadmeBlock(
  code: string,
  modules: Record<string, unknown>,
  globals: Record<string, unknown>,
  names: string[],
): Record<string, unknown> {
  const rewritten = code.replace(
    /^import\s+(\w+|\{[^}]*\})\s+from\s+"([^"]+)";$/gm,
    (_line, binding: string, specifier: string) => {
      if (!Object.hasOwn(modules, specifier)) {
        throw new Error(`the README block imports ${specifier}, which the test did not give`);
      }
      const target = `__modules[${JSON.stringify(specifier)}]`;
      return binding.startsWith("{")
        ? `const ${binding.replace(/\s+as\s+/g, ": ")} = ${target};`
        : `const ${binding} = ${target}.default;`;
    },
  );
  if (/^\s*import\s/m.test(rewritten)) throw new Error("an import the helper cannot rewrite");
  const js = ts.transpileModule(rewritten, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
  }).outputText;
  const globalNames = Object.keys(globals);
  const body = `${js}\nreturn { ${names.join(", ")} };`;
  // a README example is code we wrote and review; evaluating it is the point of the test
  const run = new Function("__modules", ...globalNames, body);
  return run(modules, ...globalNames.map((g) => globals[g]));
}
