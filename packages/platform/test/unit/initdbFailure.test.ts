/** Why a failed initdb failed, as the one line a start prints (EmbeddedPostgres.ts `whyItFailed`). */
import { assert, describe, it } from "@effect/vitest"
import { whyItFailed } from "../../src/EmbeddedPostgres.ts"

// initdb 18's output on a 20 MB tmpfs (`mount -t tmpfs -o size=20m`), as captured on this machine
const fullDisk = [
  "The files belonging to this database system will be owned by user \"postgres\".",
  "This user must also own the server process.",
  "",
  "fixing permissions on existing directory /tmp/tiny/pg ... ok",
  "creating subdirectories ... ok",
  "creating configuration files ... ok",
  "running bootstrap script ... 2026-12-02 01:54:23.595 UTC [26049] FATAL:  could not extend file \"base/1/2691\": wrote only 4096 of 8192 bytes at block 10",
  "2026-12-02 01:54:23.595 UTC [26049] HINT:  Check free disk space.",
  "2026-12-02 01:54:23.595 UTC [26049] PANIC:  cannot abort transaction 1, it was already committed",
  "Aborted",
  "child process exited with exit code 134",
  "initdb: removing contents of data directory \"/tmp/tiny/pg\""
].join("\n")

describe("whyItFailed", () => {
  it("names the first FATAL line and its hint, not the cleanup lines after it", () => {
    assert.strictEqual(
      whyItFailed(fullDisk),
      "could not extend file \"base/1/2691\": wrote only 4096 of 8192 bytes at block 10 (Check free disk space.)"
    )
  })

  it("without such a line, the last three lines", () => {
    assert.strictEqual(
      whyItFailed("creating subdirectories ... ok\ninitdb: error: directory \"/x\" exists but is not empty\nIf you want to create a new database system, either remove or empty\nthe directory \"/x\" or run initdb with an argument other than \"/x\".\n"),
      "initdb: error: directory \"/x\" exists but is not empty If you want to create a new database system, either remove or empty the directory \"/x\" or run initdb with an argument other than \"/x\"."
    )
  })
})
