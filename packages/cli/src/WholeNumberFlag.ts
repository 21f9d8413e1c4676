/**
 * A whole-number flag in decimal digits (`--limit 50`), the rule the services apply to numbers in a
 * query string (`IntParam`, `@svc/schema`): effect's `Flag.Int` also took `1e2`, `5.0` and `+5` as 100,
 * 5 and 5, numbers the server refuses when sent as written.
 */
import { Option } from "effect"
import { Flag } from "effect/cli"

export const wholeNumberFlag = (name: string): Flag.Flag<number> =>
  Flag.String(name).pipe(
    Flag.filterMap(
      (text) => /^[0-9]{1,15}$/.test(text) ? Option.some(Number(text)) : Option.none(),
      (text) => `--${name} must be a whole number in decimal digits, not ${JSON.stringify(text.slice(0, 50))}`
    )
  )
