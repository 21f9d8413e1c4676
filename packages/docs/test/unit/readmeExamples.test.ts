/**
 * The README's curl examples ask about libraries a fresh `npm start` has: the default documentation
 * (`DEFAULT_PACKAGES`), or the greeter fixture once the README's own `docs add` step, written before
 * them, has added it. An MCP example asked about `he` and the REST examples about `/acme/greeter`,
 * which a fresh start never holds (outside audit). What the examples answer was checked by running them
 * against a fresh start; this keeps the libraries they name to those that exist.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { DEFAULT_PACKAGES } from "../../src/DefaultLibraries.ts"

const README = fs.readFileSync(path.join(import.meta.dirname, "../../README.md"), "utf8")
const ADD_GREETER = "npm run svc -- docs add packages/docs/test/fixtures/greeter --id /acme/greeter"

/** Each curl command of the README's sh blocks, continuation lines joined, with its offset. */
const curlExamples = (): ReadonlyArray<{ readonly command: string; readonly at: number }> => {
  const examples: Array<{ command: string; at: number }> = []
  for (const block of README.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const joined = block[1]!.replace(/\\\n\s*/g, " ")
    for (const line of joined.split("\n")) {
      if (/^(\w+=\S+ )*curl /.test(line)) examples.push({ command: line, at: block.index })
    }
  }
  return examples
}

/** A default package's library, by name: `@effect/vitest` is `vitest` too (its id is /effect-ts/vitest). */
const bareNames = new Set(DEFAULT_PACKAGES.flatMap((name) => [name, name.split("/").at(-1)!]))

describe("README curl examples", () => {
  it("name only libraries a fresh npm start has, and the greeter fixture after the step that adds it", () => {
    const examples = curlExamples()
    assert.isAbove(examples.length, 10)
    const added = README.indexOf(ADD_GREETER)
    for (const { at, command } of examples) {
      const names = [
        ...[...command.matchAll(/libraryName=([^&'\s]+)/g)].map((match) => match[1]!),
        ...[...command.matchAll(/"libraryName":"([^"]+)"/g)].map((match) => match[1]!)
      ]
      const ids = [...command.matchAll(/libraryId=(\/[^&'\s]+)/g)].map((match) => match[1]!)
      const greeter = names.includes("greeter") || ids.some((id) => id.startsWith("/acme/greeter"))
      if (greeter) {
        assert.isAbove(added, -1, `the README must say how to add the greeter fixture: ${ADD_GREETER}`)
        assert.isBelow(added, at, `${command}: the greeter fixture is added after this example`)
        continue
      }
      for (const name of names) assert.isTrue(bareNames.has(name), `${command}: no default library is named ${name}`)
      for (const id of ids) assert.isTrue(bareNames.has(id.split("/")[2]!), `${command}: no default library has the id ${id}`)
    }
  })
})
