/** What the contract suites index: small libraries with words no other one has. */
import { Effect } from "effect"
import { IndexStore, type SourceRecord } from "../../src/IndexStore.ts"
import { split } from "../../src/Splitter.ts"

export const greeterDocs = `# Greeter

Friendly greetings in many languages, for people who like to be greeted politely.

## Switching the language

Call \`withLanguage\` to get a greeter for another language; the original stays unchanged:

\`\`\`ts
const polish = greeter.withLanguage("pl")
polish.greet("Ada")
\`\`\`

## Farewells

Saying goodbye works the same way as saying hello, with a farewell function for every language.

\`\`\`ts
greeter.farewell("Ada")
\`\`\`
`

export const widgetsDocs = `# Widgets

Widgets render dashboards of gauges and sparklines, refreshed every few seconds from a feed.

## Gauges

A gauge shows one number between a minimum and a maximum, coloured by thresholds you choose.

\`\`\`ts
const gauge = widgets.gauge({ min: 0, max: 100 })
\`\`\`
`

/** One section with prose and two code blocks (three snippets, one file-and-heading pair), and two more sections. */
export const manualDocs = `# Manual

## Installing the manual

The manual tool installs from npm; once installed, initialise it to write its configuration file.
It reads the configuration at every start, so installing it once per machine is enough.

First install the manual package:

\`\`\`sh
npm install manual
\`\`\`

Then initialise the manual once:

\`\`\`sh
manual init --home
\`\`\`

## Upgrading the manual

Upgrading the manual keeps its configuration file; install the new version over the old one and restart.

## Removing the manual

Removing the manual leaves its configuration file behind; delete that file by hand when the manual is gone.
`

export const source = (libraryId: string, version: string, kind: SourceRecord["kind"] = "folder"): SourceRecord => ({
  kind,
  location: `/srv/docs${libraryId}`,
  libraryId,
  title: libraryId.split("/")[2]!,
  description: `The docs of ${libraryId}`,
  version
})

/** Registers a version and writes `markdown`'s snippets as its live generation; the snippets written. */
export const indexed = (record: SourceRecord, markdown: string, options: { readonly makeDefault?: boolean; readonly trust?: number } = {}) =>
  Effect.gen(function*() {
    const store = yield* IndexStore
    const versionId = yield* store.register(record, "indexing", { makeDefault: options.makeDefault ?? true, trust: options.trust })
    const snippets = split(markdown, "README.md")
    yield* store.write(versionId, snippets)
    return snippets
  })
