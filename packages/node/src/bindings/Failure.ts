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
