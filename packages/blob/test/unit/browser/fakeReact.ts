/**
 * A stand-in for React's hook semantics, enough to drive `@svc/blob/react`'s hooks in Node without a DOM
 * (no renderer is installed): state updates batched to a microtask render, effects after the render with
 * cleanup on a dependency change and on unmount, `useSyncExternalStore` re-rendering on a new snapshot.
 * The hooks' own tests use it through `vi.mock("react")`; the rules they check (what one event handler's
 * calls do before any render) do not depend on React's scheduling beyond that.
 */
interface Slot {
  value?: unknown
  deps?: ReadonlyArray<unknown> | undefined
  set?: (next: unknown) => void
  cleanup?: (() => void) | undefined
  subscribe?: unknown
  unsubscribe?: (() => void) | undefined
}

interface Root<A> {
  value: A
  unmount: () => void
}

let rendering: { slots: Array<Slot>; index: number; effects: Array<() => void>; schedule: () => void } | undefined

const changed = (a: ReadonlyArray<unknown> | undefined, b: ReadonlyArray<unknown> | undefined) =>
  a === undefined || b === undefined || a.length !== b.length || a.some((x, i) => !Object.is(x, b[i]))

/** Renders `component` now, and again (on a microtask) after every state or store change until unmounted. */
export const render = <A>(component: () => A): Root<A> => {
  const slots: Array<Slot> = []
  let mounted = true
  let scheduled = false
  const root = { value: undefined as A, unmount: () => undefined as void }
  const run = () => {
    scheduled = false
    if (!mounted) return
    const effects: Array<() => void> = []
    rendering = { slots, index: 0, effects, schedule }
    try {
      root.value = component()
    } finally {
      rendering = undefined
    }
    for (const effect of effects) effect()
  }
  const schedule = () => {
    if (!scheduled && mounted) {
      scheduled = true
      queueMicrotask(run)
    }
  }
  root.unmount = () => {
    mounted = false
    for (const slot of slots) {
      slot.cleanup?.()
      slot.unsubscribe?.()
    }
  }
  run()
  return root
}

const slot = (): [Slot, () => void] => {
  if (rendering === undefined) throw new Error("a hook called outside a render")
  const index = rendering.index++
  rendering.slots[index] ??= {}
  return [rendering.slots[index], rendering.schedule]
}

export const useState = <S>(initial: S | (() => S)): [S, (next: S) => void] => {
  const [s, schedule] = slot()
  if (s.set === undefined) {
    s.value = typeof initial === "function" ? (initial as () => S)() : initial
    s.set = (next) => {
      if (!Object.is(next, s.value)) {
        s.value = next
        schedule()
      }
    }
  }
  return [s.value as S, s.set]
}

export const useRef = <T>(initial: T): { current: T } => {
  const [s] = slot()
  if (!("value" in s)) s.value = { current: initial }
  return s.value as { current: T }
}

export const useMemo = <T>(make: () => T, deps: ReadonlyArray<unknown>): T => {
  const [s] = slot()
  if (changed(s.deps, deps)) {
    s.value = make()
    s.deps = deps
  }
  return s.value as T
}

export const useCallback = <F>(f: F, deps: ReadonlyArray<unknown>): F => useMemo(() => f, deps)

export const useEffect = (effect: () => void | (() => void), deps: ReadonlyArray<unknown>) => {
  const [s] = slot()
  if (changed(s.deps, deps)) {
    s.deps = deps
    rendering!.effects.push(() => {
      s.cleanup?.()
      const cleanup = effect()
      s.cleanup = typeof cleanup === "function" ? cleanup : undefined
    })
  }
}

export const useSyncExternalStore = <T>(subscribe: (listener: () => void) => () => void, snapshot: () => T): T => {
  const [s, schedule] = slot()
  if (s.subscribe !== subscribe) {
    s.unsubscribe?.()
    s.subscribe = subscribe
    s.unsubscribe = subscribe(() => {
      if (!Object.is(snapshot(), s.value)) schedule()
    })
  }
  s.value = snapshot()
  return s.value as T
}
