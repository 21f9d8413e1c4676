/** A command's failure, told to the operator as one line: `svc: <message>` and exit 1 (bin.ts). */
export class CommandFailed extends Error {}

/**
 * Where a usage error sends the operator, `(see: svc migrate --help)`: the end of every usage error's
 * line, the parser's own (bin.ts's presenter) and the commands' ({@link UsageError}).
 */
export const helpHint = (commandPath: ReadonlyArray<string>): string => `(see: ${commandPath.join(" ")} --help)`

/**
 * A refusal of the arguments or flags given that only the command can tell (an unknown migration name,
 * `--source ""`, `--port` with `--transport stdio`): a usage error like the parser's, one line ending
 * with {@link helpHint}, exit 1. Some of them said what was wrong but not where the help is.
 */
export class UsageError extends CommandFailed {
  readonly commandPath: ReadonlyArray<string>
  readonly problem: string
  constructor(commandPath: ReadonlyArray<string>, problem: string) {
    super(`${problem} ${helpHint(commandPath)}`)
    this.commandPath = commandPath
    this.problem = problem
  }
}
