import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { questions as tunedQuestions } from "./docs-questions.ts"
import { CORPORA_DIR, corpora, DEFAULT_CORPUS_PACKAGES, type EvalQuestion, libraryRoot, questions } from "./docs-eval.ts"

const all = questions()
const byCorpus = (name: string) => all.filter((q) => q.corpus === name)
const normalized = (text: string) => text.trim().toLowerCase().replace(/\s+/g, " ")

/** A fetched corpus's MANIFEST: git blob id, size and path of each file, as the source commit has them. */
const manifest = (name: string) =>
  new Map(
    fs.readFileSync(path.join(CORPORA_DIR, name, "MANIFEST"), "utf8").trim().split("\n").map((line) => {
      const [blob, size, file] = line.split(" ")
      return [file!, { blob: blob!, size: Number(size) }] as const
    })
  )

const gitBlobId = (content: Buffer) =>
  createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex")

/**
 * The headings of a file as the splitter sees them: a Markdown file's heading lines (outside fenced code);
 * an example source file's `@title` (it becomes the file's H1).
 */
const headings = (file: string) => {
  const lines = fs.readFileSync(file, "utf8").split("\n")
  if (!/\.(md|mdx|markdown)$/.test(file)) return lines.filter((line) => /^\s*\*?\s*@title\s/.test(line))
  let fenced = false
  return lines.filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    return !fenced && /^#{1,6}\s/.test(line)
  })
}

describe("docs evaluation set", () => {
  it("has at least 200 questions over at least four corpora, 40 or more in each, vitest's docs left out", () => {
    const names = corpora().map((corpus) => corpus.name)
    expect(names.length).toBeGreaterThanOrEqual(4)
    expect(names).not.toContain("vitest")
    expect(all.length).toBeGreaterThanOrEqual(200)
    for (const name of names) expect(byCorpus(name).length, name).toBeGreaterThanOrEqual(40)
    expect(new Set(all.map((q) => q.corpus))).toEqual(new Set(names))
  })

  it("has unique ids, each naming its corpus", () => {
    expect(new Set(all.map((q) => q.id)).size).toBe(all.length)
    for (const q of all) expect(q.id).toMatch(new RegExp(`^${q.corpus}-\\d{3}$`))
  })

  it("names a library of its corpus for every question", () => {
    for (const q of all) {
      if (q.corpus === "default") expect(DEFAULT_CORPUS_PACKAGES as ReadonlyArray<string>, q.id).toContain(q.library)
      else expect(q.library, q.id).toBe(q.corpus)
      expect(q.library, q.id).not.toBe("vitest")
    }
  })

  it("splits every corpus into halves within 10 % of each other", () => {
    for (const corpus of corpora()) {
      const questions = byCorpus(corpus.name)
      const dev = questions.filter((q) => q.half === "dev").length
      const test = questions.filter((q) => q.half === "test").length
      expect(dev + test, corpus.name).toBe(questions.length)
      expect(Math.abs(dev - test) / questions.length, `${corpus.name}: ${dev} dev, ${test} test`).toBeLessThanOrEqual(0.1)
    }
  })

  it("repeats none of the tuned questions of docs-questions.ts, nor itself", () => {
    const tuned = new Set(tunedQuestions.map((q) => normalized(q.question)))
    for (const q of all) expect(tuned.has(normalized(q.question)), `${q.id}: ${q.question}`).toBe(false)
    expect(new Set(all.map((q) => normalized(q.question))).size).toBe(all.length)
  })

  it("labels only files that exist in the corpus, and headings those files have", () => {
    for (const corpus of corpora()) {
      const listed = corpus.kind === "folder" ? manifest(corpus.name) : undefined
      for (const q of byCorpus(corpus.name)) {
        expect(q.paths.length, q.id).toBeGreaterThan(0)
        const root = libraryRoot(corpus, q.library)
        for (const file of q.paths) {
          if (listed !== undefined) expect(listed.has(file), `${q.id}: ${file} not in ${corpus.name}/MANIFEST`).toBe(true)
          if (corpus.present) expect(fs.existsSync(path.join(root, file)), `${q.id}: ${file} under ${root}`).toBe(true)
        }
        if (q.heading !== undefined && corpus.present) expectHeading(q, root)
      }
    }
  })

  it("has the fetched corpora's files unaltered, as their MANIFEST lists them (when they are here)", () => {
    for (const corpus of corpora().filter((corpus) => corpus.kind === "folder" && corpus.present)) {
      for (const [file, { blob, size }] of manifest(corpus.name)) {
        const content = fs.readFileSync(path.join(corpus.folder, file))
        expect(content.length, `${corpus.name}/${file}`).toBe(size)
        expect(gitBlobId(content), `${corpus.name}/${file}`).toBe(blob)
      }
    }
  })
})

/** A question's heading is a heading of each of its files (a substring, as the bench matches it). */
const expectHeading = (q: EvalQuestion, root: string) => {
  const wanted = q.heading!.toLowerCase()
  for (const file of q.paths) {
    const found = headings(path.join(root, file)).some((line) => line.toLowerCase().includes(wanted))
    expect(found, `${q.id}: no heading containing "${q.heading}" in ${file}`).toBe(true)
  }
}
