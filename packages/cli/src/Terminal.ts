/**
 * Text from the database or a service shown on a terminal: control characters escaped (`\u001b`),
 * never sent raw — a library title or id of `ESC [31m` recoloured the terminal of whoever listed it.
 */
export const printable = (text: string): string =>
  text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
