/**
 * Bundles a browser entry with esbuild (a devDependency: only the demo and the tests build bundles), in
 * memory: nothing is written, so there is no build output to keep out of git.
 *
 * @module
 */
import { fileURLToPath } from "node:url"

export interface Bundle {
  readonly code: string
  /** every input file esbuild pulled in (to check that no server module or node builtin got in) */
  readonly inputs: ReadonlyArray<string>
}

/** The demo page's bundle. */
export const pageEntry: string = fileURLToPath(new URL("./page.tsx", import.meta.url))

/** Bundles `entry` for browsers (ES2022, minified). A node builtin anywhere in the graph fails the build. */
export const bundle = async (entry: string, options: { readonly minify?: boolean } = {}): Promise<Bundle> => {
  const esbuild = await import("esbuild")
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: options.minify ?? true,
    jsx: "automatic",
    metafile: true,
    logLevel: "silent",
    define: { "process.env.NODE_ENV": "\"production\"" }
  })
  const output = result.outputFiles[0]
  if (output === undefined) throw new Error(`esbuild produced nothing for ${entry}`)
  return { code: output.text, inputs: Object.keys(result.metafile.inputs) }
}
