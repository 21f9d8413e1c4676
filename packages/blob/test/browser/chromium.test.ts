/**
 * The uploads demo in real headless Chromium (Debian's, through playwright-core) against radosgw: a small
 * file and a multipart file land intact (checksums compared), a refused content type shows
 * content_type_not_allowed with its message, cancel mid-upload shows canceled, and a bucket without CORS
 * for the page's origin shows the CORS message; `useUpload` on a test page of the same origin goes
 * idle -> uploading -> done, and canceled, and back to idle; an `onProgress` that throws does not stop
 * a multipart upload. One browser for the file.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { Browser, Page } from "playwright-core"
import { fileURLToPath } from "node:url"
import { bundle } from "../../src/demo/bundle.ts"
import { DEFAULT_CONTENT_TYPES } from "../../src/demo/Service.ts"
import { contentTypeRefusal } from "../../src/shared/contentTypes.ts"
import { launchChromium, type RunningDemo, startDemo } from "../support/browser.ts"

const MiB = 1024 * 1024

let browser: Browser
let demo: RunningDemo
let noCors: RunningDemo
let page: Page
let dir: string

// without Chromium every test fails (not skips) with what to install
let launchFailure: unknown

beforeAll(async () => {
  try {
    browser = await launchChromium()
  } catch (error) {
    launchFailure = error
    return
  }
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-blob-chromium-"))
  demo = await startDemo("demo")
  // a bucket whose CORS rules allow another origin only: the browser's preflight is refused
  noCors = await startDemo("nocors", { corsOrigins: ["http://elsewhere.example"] })
  page = await browser.newPage()
  await page.goto(demo.url)
  await page.waitForSelector("input[type=file]")
})

afterAll(async () => {
  await browser?.close()
  await demo?.close()
  await noCors?.close()
  if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true })
})

/** A test that needs the browser: fails with the launch error when there is none. */
const test = (name: string, body: () => Promise<void>) =>
  it(name, async () => {
    if (launchFailure !== undefined) throw launchFailure
    await body()
  })

const writeFile = async (name: string, bytes: Uint8Array) => {
  const file = path.join(dir, name)
  await fs.writeFile(file, bytes)
  return file
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const row = (p: Page, name: string) => p.locator(`li.upload[data-name="${name}"]`)

/** Waits for the row of `name` to reach one of `statuses`; returns the status. */
const settled = async (p: Page, name: string, statuses: ReadonlyArray<string>, timeout = 60_000) => {
  await p.waitForSelector(
    statuses.map((s) => `li.upload[data-name="${name}"][data-status="${s}"]`).join(", "),
    { timeout }
  )
  return row(p, name).getAttribute("data-status")
}

const storedBytes = (running: RunningDemo, storedPath: string) => Effect.runPromise(running.bucket.getBytes(storedPath))

describe("uploads demo in Chromium", () => {
  test("a small file lands intact", async () => {
    const bytes = new TextEncoder().encode("hello from chromium\n".repeat(500))
    await page.setInputFiles("input[type=file]", await writeFile("notes.txt", bytes))
    assert.strictEqual(await settled(page, "notes.txt", ["done", "error"]), "done")
    const storedPath = (await row(page, "notes.txt").locator(".path").textContent())!
    assert.match(storedPath, /^uploads\/[0-9a-f]+\/notes\.txt$/)
    assert.strictEqual(sha256(await storedBytes(demo, storedPath)), sha256(bytes))
    assert.strictEqual(await row(page, "notes.txt").locator(".percent").textContent(), "100%")
  })

  test("a multipart file (> 16 MiB) lands intact", async () => {
    const bytes = randomBytes(20 * MiB + 123)
    await page.setInputFiles("input[type=file]", await writeFile("big.bin", bytes))
    assert.strictEqual(await settled(page, "big.bin", ["done", "error"]), "done")
    const storedPath = (await row(page, "big.bin").locator(".path").textContent())!
    const stored = await storedBytes(demo, storedPath)
    assert.strictEqual(stored.length, bytes.length)
    assert.strictEqual(sha256(stored), sha256(bytes))
  })

  test("a refused content type shows content_type_not_allowed with its message", async () => {
    await page.setInputFiles("input[type=file]", await writeFile("page.html", new TextEncoder().encode("<!doctype html><p>hi</p>")))
    assert.strictEqual(await settled(page, "page.html", ["done", "error"]), "error")
    const expected = contentTypeRefusal("text/html", DEFAULT_CONTENT_TYPES)!
    assert.strictEqual(await row(page, "page.html").getAttribute("data-code"), "content_type_not_allowed")
    assert.strictEqual(await row(page, "page.html").locator(".error-message").textContent(), expected.message)
    // the message ends with the hint (spec 3B message rule 1): shown once, not again below it
    const shown = (await row(page, "page.html").locator(".error").textContent())!
    assert.strictEqual(shown.split(expected.hint!).length - 1, 1, shown)
  })

  test("cancel mid-upload shows canceled", async () => {
    // uploads throttled to 4 MiB/s so there is a "mid" to cancel in
    const cdp = await page.context().newCDPSession(page)
    await cdp.send("Network.enable")
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 4 * MiB })
    try {
      await page.setInputFiles("input[type=file]", await writeFile("slow.bin", randomBytes(24 * MiB)))
      await page.waitForFunction(() => {
        const percent = document.querySelector('li.upload[data-name="slow.bin"] .percent')?.textContent ?? "0%"
        return Number.parseInt(percent, 10) > 0
      }, undefined, { timeout: 30_000 })
      await row(page, "slow.bin").locator("button.cancel").click()
      assert.strictEqual(await settled(page, "slow.bin", ["canceled", "done", "error"]), "canceled")
      assert.strictEqual(await row(page, "slow.bin").locator(".error").count(), 0)
      const percent = Number.parseInt((await row(page, "slow.bin").locator(".percent").textContent())!, 10)
      assert.isBelow(percent, 100)
    } finally {
      await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 })
      await cdp.detach()
    }
  })

  test("useUpload: done with the stored path, canceled mid-upload, reset to idle", async () => {
    const app = await bundle(fileURLToPath(new URL("./fixtures/useUpload-page.tsx", import.meta.url)))
    const single = await browser.newPage()
    const cdp = await single.context().newCDPSession(single)
    try {
      // the demo's origin (its CORS rules), the test page's script instead of the demo's
      await single.goto(`${demo.url}/health`)
      await single.addScriptTag({ content: app.code, type: "module" })
      await single.waitForSelector("#single[data-status=idle]")
      const bytes = new TextEncoder().encode("through useUpload\n".repeat(100))
      await single.setInputFiles("#single-file", await writeFile("hook.txt", bytes))
      await single.waitForSelector("#single[data-status=done]", { timeout: 60_000 })
      const storedPath = (await single.getAttribute("#single", "data-path"))!
      assert.strictEqual(sha256(await storedBytes(demo, storedPath)), sha256(bytes))
      assert.strictEqual(await single.textContent("#single-percent"), "100")

      await cdp.send("Network.enable")
      await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 4 * MiB })
      await single.setInputFiles("#single-file", await writeFile("hook-slow.bin", randomBytes(20 * MiB)))
      await single.waitForFunction(() => Number(document.querySelector("#single-percent")?.textContent ?? "0") > 0, undefined, { timeout: 30_000 })
      await single.click("#single-cancel")
      await single.waitForSelector("#single[data-status=canceled]")
      assert.strictEqual(await single.getAttribute("#single", "data-code"), "")
      await single.click("#single-reset")
      await single.waitForSelector("#single[data-status=idle]")
    } finally {
      await cdp.detach().catch(() => undefined)
      await single.close()
    }
  })

  test("an onProgress that throws is reported to the page's error handlers, and a multipart upload still lands", async () => {
    const app = await bundle(fileURLToPath(new URL("./fixtures/throwing-onProgress-page.ts", import.meta.url)))
    const other = await browser.newPage()
    try {
      await other.goto(`${demo.url}/health`)
      await other.addScriptTag({ content: app.code, type: "module" })
      const bytes = randomBytes(17 * MiB)
      await other.setInputFiles("#throwing-file", await writeFile("progress-bug.bin", bytes))
      await other.waitForSelector("body[data-status]", { timeout: 60_000 })
      const { status, error, path: storedPath, reported } = await other.evaluate(() => ({ ...document.body.dataset }))
      assert.strictEqual(status, "done", error)
      assert.strictEqual(sha256(await storedBytes(demo, storedPath!)), sha256(bytes))
      assert.isAbove(Number(reported), 0)
    } finally {
      await other.close()
    }
  })

  test("a bucket without CORS for the page's origin shows the CORS message", async () => {
    const other = await browser.newPage()
    try {
      await other.goto(noCors.url)
      await other.setInputFiles("input[type=file]", await writeFile("blocked.txt", new TextEncoder().encode("blocked\n")))
      assert.strictEqual(await settled(other, "blocked.txt", ["done", "error"]), "error")
      assert.strictEqual(await row(other, "blocked.txt").getAttribute("data-code"), "request_failed")
      const message = (await row(other, "blocked.txt").locator(".error-message").textContent())!
      assert.include(message, "the bucket must allow PUT and the signed headers")
      assert.include(message, noCors.url) // names the page's origin
    } finally {
      await other.close()
    }
  })
})
