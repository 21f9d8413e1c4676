/** Guards on the workspace itself, which the whole suite relies on. */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../../../", import.meta.url))
const manifests = [
  path.join(root, "package.json"),
  ...fs.readdirSync(path.join(root, "packages")).map((name) => path.join(root, "packages", name, "package.json"))
].filter((file) => fs.existsSync(file))

// The effect 3 line; effect 4 has all of these inside `effect` itself.
const superseded = ["@effect/schema", "@effect/platform", "@effect/rpc", "@effect/sql", "@effect/cli"]

describe("workspace", () => {
  it("no package depends on a superseded effect 3.x package", () => {
    assert.isAbove(manifests.length, 3)
    for (const file of manifests) {
      const manifest = JSON.parse(fs.readFileSync(file, "utf8"))
      const names = Object.keys({
        ...manifest.dependencies,
        ...manifest.devDependencies,
        ...manifest.peerDependencies,
        ...manifest.optionalDependencies
      })
      for (const name of names) {
        assert.notInclude(superseded, name, `${path.relative(root, file)} depends on ${name}`)
      }
    }
  })

  it("npm scripts run on Node 24 (the pinned devDependency), whatever the system Node", () => {
    // vitest runs under npm's PATH, which puts node_modules/.bin/node (the `node` package) first.
    assert.strictEqual(Number(process.versions.node.split(".")[0]), 24)
  })
})
