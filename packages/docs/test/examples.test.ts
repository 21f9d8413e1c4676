/**
 * Example source files as documentation: which files count (only inside an examples folder), and how
 * one becomes a snippet (doc comment → title and description, the rest → code). Also the real thing:
 * effect's own ai-docs, as installed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { formatOf, split } from "../src/Splitter.ts"

describe("example files", () => {
  it("count only inside an examples folder, never declarations or builds", () => {
    assert.strictEqual(formatOf("ai-docs/src/01_effect/10_basics.ts"), "example")
    assert.strictEqual(formatOf("examples/retry.mjs"), "example")
    assert.strictEqual(formatOf("packages/x/example/App.tsx"), "example")
    assert.isUndefined(formatOf("src/Effect.ts"))
    assert.isUndefined(formatOf("dist/index.js"))
    assert.isUndefined(formatOf("examples/types.d.ts"))
    assert.strictEqual(formatOf("docs/guide.md"), "markdown")
  })

  it("the doc comment's @title and text become title and description; the code the body", () => {
    const source = [
      "/**",
      " * @title Retrying with a schedule",
      " *",
      " * Retry a failing effect with exponential backoff, at most five times.",
      " */",
      "import { Effect, Schedule } from \"effect\"",
      "",
      "export const retried = Effect.retry(task, { schedule: Schedule.exponential(\"100 millis\"), times: 5 })"
    ].join("\n")
    const [snippet, ...rest] = split(source, "ai-docs/src/02_schedule/10_retry.ts")
    assert.strictEqual(rest.length, 0)
    assert.strictEqual(snippet!.kind, "code")
    assert.strictEqual(snippet!.title, "Retrying with a schedule")
    assert.strictEqual(snippet!.description, "Retry a failing effect with exponential backoff, at most five times.")
    assert.strictEqual(snippet!.language, "ts")
    assert.match(snippet!.body, /^import \{ Effect, Schedule \} from "effect"/)
    assert.notInclude(snippet!.body, "@title")
  })

  it("without @title the comment's first line is the title; without a comment the file name", () => {
    const withComment = split("/** Streams from files\n *\n * Read a file as a stream of lines.\n */\nconst lines = readLines(path)\n", "examples/lines.js")
    assert.strictEqual(withComment[0]!.title, "Streams from files")
    assert.strictEqual(withComment[0]!.description, "Read a file as a stream of lines.")
    assert.strictEqual(withComment[0]!.language, "js")
    const bare = split("const server = createServer(handler)\nserver.listen(8080)\n", "examples/server.mjs")
    assert.strictEqual(bare[0]!.title, "server")
    assert.strictEqual(bare[0]!.kind, "code")
  })

  it("effect's ai-docs split into titled, described code snippets", () => {
    const root = path.resolve("node_modules/effect/ai-docs/src")
    const files = fs.readdirSync(root, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts"))
    assert.isAbove(files.length, 20)
    let commented = 0
    let described = 0
    for (const file of files) {
      const relative = `ai-docs/src/${file}`
      assert.strictEqual(formatOf(relative), "example", relative)
      const content = fs.readFileSync(path.join(root, file), "utf8")
      const snippets = split(content, relative)
      assert.isAbove(snippets.length, 0, relative)
      assert.isTrue(snippets.every((snippet) => snippet.kind === "code" && snippet.language === "ts"), relative)
      // the guides open with a doc comment (the fixtures they import do not)
      if (content.trimStart().startsWith("/**")) {
        commented++
        assert.notStrictEqual(snippets[0]!.title, path.basename(file, ".ts"), `${relative} has a real title`)
        if (snippets[0]!.description !== "") described++
      }
    }
    assert.isAbove(commented, 20)
    assert.isAbove(described, commented / 2)
  })
})
