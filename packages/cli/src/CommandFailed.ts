/** A command's failure, told to the operator as one line: `svc: <message>` and exit 1 (bin.ts). */
export class CommandFailed extends Error {}
