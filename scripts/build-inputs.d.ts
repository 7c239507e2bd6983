/** The digest of what `npm run build` reads under `root` (build-inputs.js). */
export function buildInputsDigest(root: string, typescriptVersion: string): string;
