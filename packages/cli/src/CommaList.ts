/**
 * The entries of comma-separated flag values (`a, b,,c` → `["a", "b", "c"]`): trimmed, empty ones
 * dropped. A flag given but naming nothing is its caller's to refuse (`--source ""`, `--libraries=`):
 * read as "none given", it would mean "all", the opposite of what was asked.
 */
export const commaList = (values: ReadonlyArray<string>): ReadonlyArray<string> =>
  values.flatMap((value) => value.split(",")).map((entry) => entry.trim()).filter((entry) => entry !== "")
