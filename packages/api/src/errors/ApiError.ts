import { Errors } from "@hostplane/core"
import { Schema, SchemaGetter } from "effect"
import { HttpApiSchema } from "effect/http-api"

type ErrorClass = (typeof Errors.all)[number]

/** The wire envelope of decisions.md part 1. */
export const Envelope = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  details: Schema.optionalKey(Errors.Details)
})
export type Envelope = typeof Envelope.Type

const cache = new Map<ErrorClass, Schema.Top>()

/**
 * The schema an endpoint declares for a core error: the error itself on the server side,
 * `{ code, message, details }` with the table's status on the wire.
 */
export const apiError = <C extends ErrorClass>(errorClass: C) => {
  const cached = cache.get(errorClass)
  if (cached !== undefined) return cached as ReturnType<typeof make<C>>
  const schema = make(errorClass)
  cache.set(errorClass, schema)
  return schema
}

const make = <C extends ErrorClass>(errorClass: C) => {
  const code = errorClass.code
  const tag = new errorClass({ message: "" })._tag
  return Schema.Struct({
    code: Schema.Literal(code),
    message: Schema.String,
    details: Schema.optionalKey(Errors.Details)
  }).pipe(
    Schema.decodeTo(
      errorClass as unknown as Schema.Codec<
        InstanceType<C>,
        { readonly _tag: string; readonly message: string; readonly details?: Errors.Details }
      >,
      {
        decode: SchemaGetter.transform((wire) => ({ ...wire, _tag: tag })),
        encode: SchemaGetter.transform((error) => ({
          code,
          message: error.message,
          ...(error.details === undefined ? {} : { details: error.details })
        }))
      }
    ),
    HttpApiSchema.status(Errors.statusOf(code) as 400),
    Schema.annotate({ identifier: `Error_${code}` })
  )
}

/** Envelope schemas for a list of core errors, for an endpoint's `error` option. */
export const apiErrors = <const Cs extends ReadonlyArray<ErrorClass>>(...classes: Cs) =>
  classes.map((c) => apiError(c)) as { readonly [K in keyof Cs]: ReturnType<typeof make<Cs[K]>> }
