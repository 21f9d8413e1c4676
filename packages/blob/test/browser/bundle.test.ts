/**
 * The browser entrypoints stay browser code: bundled by esbuild for browsers, their module graph holds no
 * server module, no AWS SDK and no node builtin (esbuild would fail on a `node:` import with platform
 * browser; the inputs are checked as well), and they stay small.
 */
import { assert, describe, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import { bundle, pageEntry } from "../../src/demo/bundle.ts"

const entry = (relative: string) => fileURLToPath(new URL(relative, import.meta.url))

const forbidden = (inputs: ReadonlyArray<string>) =>
  inputs.filter((input) => input.startsWith("node:") || /src\/server\/|@aws-sdk|@svc\/platform|platform\/src/.test(input))

describe("browser bundles", () => {
  for (const [name, file] of [["@svc/blob/browser", "../../src/browser/index.ts"], ["@svc/blob/react", "../../src/react/index.ts"]] as const) {
    it(`${name}: no server code, no node builtins, small`, async () => {
      const { code, inputs } = await bundle(entry(file))
      assert.deepStrictEqual(forbidden(inputs), [])
      assert.notMatch(code, /from\s*["']node:|require\(["']node:/)
      // effect's core (Schema for BlobError, the runtime and Schedule for the client) is most of it
      assert.isBelow(code.length, 450 * 1024, `${name} is ${Math.round(code.length / 1024)} KiB minified`)
    })
  }

  it("the demo page bundles React and the hooks, without server code", async () => {
    const { inputs } = await bundle(pageEntry)
    assert.deepStrictEqual(forbidden(inputs), [])
    assert.isTrue(inputs.some((input) => input.includes("react-dom")))
  })
})
