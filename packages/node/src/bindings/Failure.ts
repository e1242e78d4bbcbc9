import { Cause, Effect, Exit } from "effect"

/** What a binding call answers to the worker: a value, or an error the entry module rejects with. */
export type BindingAnswer =
  { readonly value: unknown } | { readonly error: { readonly message: string; readonly code?: string } }

/**
 * A binding call refused by the node: the worker's promise rejects with an `Error` whose message starts with `code`
 * (decisions.md part 13: `quota_exceeded`, `from_not_allowed`, the AI gateway's codes...) and whose `code` is it.
 */
export class BindingFailure extends Error {
  readonly code: string
  constructor(code: string, detail: string) {
    super(`${code}: ${detail}`)
    this.code = code
  }
}

/** Any failure of a handler as the worker sees it; a node fault says no more than that it happened. */
export const answerOf = (error: unknown): BindingAnswer =>
  error instanceof BindingFailure
    ? { error: { message: error.message, code: error.code } }
    : { error: { message: "internal: the node failed to answer this binding call" } }

/**
 * Runs a service call for a binding: its typed refusal becomes a rejection whose message starts with the worker's word
 * for it (`codes`, by the error's tag; `internal` for one the table does not name); a defect stays a node fault.
 */
export const runRefusable = async <A>(
  effect: Effect.Effect<A, { readonly _tag: string; readonly message: string }>,
  codes: Readonly<Record<string, string>>
): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.findErrorOption(exit.cause)
  if (failure._tag === "Some") {
    throw new BindingFailure(codes[failure.value._tag] ?? "internal", failure.value.message)
  }
  throw Cause.squash(exit.cause)
}
