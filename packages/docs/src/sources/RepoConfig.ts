/**
 * `svc.json` at the root of a folder, a git repository or an npm package: what its owners say about
 * their docs (like Context7's `context7.json`). Every field is optional:
 *
 * ```json
 * {
 *   "title": "Widgets",
 *   "description": "Reusable widgets for dashboards",
 *   "folders": ["docs", "README.md"],
 *   "exclude": ["docs/internal", "docs/drafts.md"],
 *   "rules": ["Always dispose a widget with Widget.close"]
 * }
 * ```
 *
 * - `title`, `description`: the library's, instead of package.json's or the README's (an operator's
 *   `--title`/`--description` still win);
 * - `folders`: only the files under these folders (or these files) are read, paths relative to the
 *   root; each must exist; an empty list reads every folder (Context7's default);
 * - `exclude`: folders or files (relative paths) never read, also inside `folders`;
 * - `rules`: rules for agents using the library, stored with it (`svc docs list` shows them).
 *
 * Anything else is refused, naming the field: an unknown field, a path with `..` or a leading `/`,
 * text over its cap (title 100, description 1,000, a rule 500 characters; 50 folders, 200 excludes,
 * 30 rules), a title or rule that is blank or not one line of text, control characters, unpaired
 * surrogates, a file over 64 kB or not UTF-8, or JSON that does not parse. `$schema` is allowed and ignored.
 */
import { Effect, FileSystem, Option, Path, Schema } from "effect"
import { IndexFailed, topFile } from "./Source.ts"

export const CONFIG_FILE = "svc.json"
/** Decodes strictly: a byte that is not UTF-8 refuses the file instead of becoming U+FFFD. */
const UTF8 = new TextDecoder("utf-8", { fatal: true })
const MAX_CONFIG_BYTES = 64_000

const RelativePath = Schema.String.check(
  Schema.isPattern(/^(?!\/)(?!.*(^|\/)\.\.(\/|$))[^\0\\]+$/, { message: "must be a path relative to the root, without .." }),
  Schema.isMaxLength(300)
)

/**
 * Text an agent is shown as written (a rule leads every answer: a line break in one would forge the
 * answer's own separators and headings): no control character (a description may break lines), no
 * unpaired surrogate (not text; the index could not store it as written), and not blank.
 */
const ShownText = (options: { readonly maxLength: number; readonly lines: "one" | "many"; readonly blank?: boolean }) =>
  Schema.String.check(
    Schema.isMaxLength(options.maxLength),
    Schema.makeFilter((text: string) =>
      !(options.lines === "one" ? /[\u0000-\u001f\u007f-\u009f]/ : /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/).test(text) ||
      (options.lines === "one"
        ? "must be one line of text (no line breaks or control characters)"
        : "must be text (no control characters but line breaks and tabs)")
    ),
    Schema.makeFilter((text: string) => text.isWellFormed() || "holds an unpaired surrogate (\\ud800-\\udfff alone): not text"),
    Schema.makeFilter((text: string) => options.blank === true || text.trim() !== "" || "must not be blank")
  )

export const RepoConfig = Schema.Struct({
  $schema: Schema.optionalKey(Schema.String),
  title: Schema.optionalKey(ShownText({ maxLength: 100, lines: "one" })),
  description: Schema.optionalKey(ShownText({ maxLength: 1000, lines: "many", blank: true })),
  folders: Schema.optionalKey(Schema.Array(RelativePath).check(Schema.isMaxLength(50))),
  exclude: Schema.optionalKey(Schema.Array(RelativePath).check(Schema.isMaxLength(200))),
  rules: Schema.optionalKey(Schema.Array(ShownText({ maxLength: 500, lines: "one" })).check(Schema.isMaxLength(30)))
})
export type RepoConfig = typeof RepoConfig.Type

const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(RepoConfig))

/** A path relative to the root without a trailing slash. */
const normalise = (entry: string) => entry.replace(/^\.\//, "").replace(/\/+$/, "")

/** Whether `file` (relative, `/`-separated) is `entry` or inside it. */
export const isUnder = (file: string, entry: string): boolean => {
  const prefix = normalise(entry)
  return prefix === "" || prefix === "." || file === prefix || file.startsWith(`${prefix}/`)
}

/** A decoding message as `field: what is wrong` (`at ["folders"][0]` → `folders[0]`). */
const describeIssue = (message: string): string => {
  const match = /^([\s\S]*?)\n\s*at (\S+)\s*$/.exec(message.trim())
  if (match === null) return /valid JSON/.test(message) ? "is not valid JSON" : message.replace(/\s+/g, " ").trim()
  const field = match[2]!.replace(/^\["([^"]+)"\]/, "$1").replace(/\["([^"]+)"\]/g, ".$1")
  return `${field}: ${match[1]!.replace(/\s+/g, " ").trim().replace(/^Expected no excess property$/, "is not a field of svc.json")}`
}

/**
 * The root's `svc.json`, checked (its `folders` must exist), or none when there is no such file.
 * `shown` names the source in messages (a git clone's temporary folder is not worth showing).
 */
export const readRepoConfig = Effect.fnUntraced(function*(root: string, shown: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const bad = (message: string) => new IndexFailed({ category: "invalid_source", message: `${CONFIG_FILE} of ${shown}: ${message}` })
  const found = yield* topFile(root, CONFIG_FILE)
  if (found._tag === "absent") return Option.none<RepoConfig>()
  if (found._tag === "foreign") return yield* bad("is a link that leads out of the source: give the file itself")
  const file = found.file
  const info = yield* fs.stat(file).pipe(Effect.option)
  if (Option.isNone(info)) return Option.none<RepoConfig>()
  if (info.value.type !== "File") return yield* bad("is not a file")
  if (Number(info.value.size) > MAX_CONFIG_BYTES) return yield* bad(`is bigger than ${MAX_CONFIG_BYTES / 1000} kB`)
  const bytes = yield* fs.readFile(file).pipe(Effect.mapError((error) => bad(`cannot be read (${error.message})`)))
  let text: string
  try {
    text = UTF8.decode(bytes)
  } catch {
    return yield* bad("is not UTF-8 text (RFC 8259: a JSON file is UTF-8)")
  }
  const config = yield* decode(text, { onExcessProperty: "error" }).pipe(
    Effect.mapError((error) => bad(describeIssue(error.message)))
  )
  for (const [index, entry] of (config.folders ?? []).entries()) {
    const exists = yield* fs.exists(path.join(root, normalise(entry))).pipe(Effect.orElseSucceed(() => false))
    if (!exists) return yield* bad(`folders[${index}] "${entry}" does not exist`)
  }
  return Option.some(config)
})
