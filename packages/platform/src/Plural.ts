/** `1 file`, `0 files`, `3 snippets`: a count and its noun, for log lines and CLI output. */
export const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? "" : "s"}`
