import { Context, Effect } from "effect"

/**
 * When the listener serving the API begins its graceful stop. A response that never ends by itself (a log stream)
 * ends then, so a stop is not held for the whole shutdown timeout by a client that would go on reading. Never by
 * default: a host that mounts the API stops it its own way, and says so by providing this.
 */
export const Draining = Context.Reference<{ readonly started: Effect.Effect<void> }>("@hostplane/http/Draining", {
  defaultValue: () => ({ started: Effect.never })
})
