/**
 * A least-recently-used map bounded by the total weight of its values (entries, or bytes).
 *
 * Its entries carry the `offers_version` they were computed at (see migration 0008): a statement
 * that reads the version sees the offers of the same snapshot, so an entry is exact for as long as
 * the version is unchanged. Entries of an older version are simply replaced when next computed.
 */
export class Remembered<V extends { readonly version: unknown }> {
  private readonly entries = new Map<string, V>()
  private weight = 0
  private readonly capacity: number
  private readonly weigh: (key: string, value: V) => number
  constructor(capacity: number, weigh: (key: string, value: V) => number) {
    this.capacity = capacity
    this.weigh = weigh
  }
  get(key: string): V | undefined {
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, entry)
    }
    return entry
  }
  set(key: string, value: V) {
    const weight = this.weigh(key, value)
    if (weight > this.capacity) return
    this.delete(key)
    this.entries.set(key, value)
    this.weight += weight
    for (const [oldest, entry] of this.entries) {
      if (this.weight <= this.capacity) break
      this.entries.delete(oldest)
      this.weight -= this.weigh(oldest, entry)
    }
  }
  private delete(key: string) {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.weight -= this.weigh(key, entry)
  }
}
