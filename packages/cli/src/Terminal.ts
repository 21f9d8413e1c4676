import { Console, Effect } from "effect"

/**
 * Text from the database or a service shown on a terminal: control characters escaped (`\u001b`),
 * never sent raw — a library title or id of `ESC [31m` recoloured the terminal of whoever listed it.
 */
export const printable = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, escaped)

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/** One result line on stdout, {@link printable}. */
export const printLine = (line: string) => Console.log(printable(line))

/**
 * A result line that must reach its reader, a key shown once: waits for the write and fails when it
 * did not go through (a full disk, a reader gone), so that the caller can undo what nobody will see.
 */
export const deliverLine = (line: string) =>
  Effect.callback<void, Error>((resume) => {
    process.stdout.write(`${printable(line)}\n`, (error) =>
      resume(
        error == null
          ? Effect.void
          : Effect.fail(new Error(`could not write the output (${(error as NodeJS.ErrnoException).code ?? error.message})`))
      ))
  })

/** One progress line on stderr (a log: stdout holds the result alone), {@link printable}. */
export const printProgress = (line: string) => Console.error(printable(line))

/**
 * A result as JSON for a terminal: JSON escapes C0 controls in strings but writes DEL and C1 controls
 * (`\u009b`, a CSI to some terminals) raw, so those are escaped too — the same value to a JSON reader.
 */
export const printableJson = (value: unknown): string => JSON.stringify(value, null, 2).replace(/[\u007f-\u009f]/g, escaped)

/** A result as JSON on stdout ({@link printableJson}). */
export const printJson = (value: unknown) => Console.log(printableJson(value))
