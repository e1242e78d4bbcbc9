import { Redacted, Schema } from "effect"
import type { Sealed } from "./Sealer.ts"
import type { ProjectId } from "../kernel/Ids.ts"

/** Secret names (decisions.md part 1): a letter or underscore, then up to 127 letters, digits or underscores. */
export const secretNamePattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/u

/** The exact names the runtime binds itself; a secret of that name would shadow the binding. */
export const reservedSecretNames: ReadonlyArray<string> = ["DB", "ASSETS"]

/** Every name starting with this prefix belongs to the service. */
export const reservedSecretPrefix = "SERVICE_"

/**
 * Whether `name` is reserved (spec 4.5): `DB`, `ASSETS` or any name starting `SERVICE_`. The check ignores case, so
 * `db`, `Assets` and `service_token` are refused too: a secret differing from a binding only by case would be
 * confusing at best, and lost on platforms whose environment is case-insensitive. Names themselves stay
 * case-sensitive (`API_KEY` and `api_key` are two secrets).
 */
export const isReservedSecretName = (name: string): boolean => {
  const upper = name.toUpperCase()
  return reservedSecretNames.includes(upper) || upper.startsWith(reservedSecretPrefix)
}

/** Largest secret value: 64 KiB of UTF-8 (decisions.md part 4). */
export const maxSecretValueBytes = 64 * 1024

const utf8Length = (value: string): number => {
  // Every UTF-16 code unit takes at least one UTF-8 byte, so a long string is refused without encoding it.
  if (value.length > maxSecretValueBytes) return value.length
  return new TextEncoder().encode(value).byteLength
}

/** Why a value is refused, or undefined when it may be sealed; the reasons never quote the value. */
export const secretValueProblem = (value: string): string | undefined => {
  if (!value.isWellFormed()) return "must be well-formed Unicode text (no lone surrogates)"
  if (utf8Length(value) > maxSecretValueBytes) return `must be at most ${maxSecretValueBytes} bytes of UTF-8`
  return undefined
}

/** A secret value: well-formed Unicode text, at most 64 KiB as UTF-8; it may be empty. */
export const SecretValue = Schema.String.check(Schema.makeFilter((value: string) => secretValueProblem(value) ?? true))

/** `PUT .../secrets/{secretName}` body. */
export const PutSecretInput = Schema.Struct({ value: SecretValue })
export type PutSecretInput = typeof PutSecretInput.Type

/** SecretMeta: name and version only; the value is never returned. `version` is 1 on the first put of a name. */
export const SecretMeta = Schema.Struct({
  name: Schema.String,
  version: Schema.Int,
  updatedAt: Schema.String
})
export type SecretMeta = typeof SecretMeta.Type

export const SecretList = Schema.Struct({ items: Schema.Array(SecretMeta) })
export type SecretList = typeof SecretList.Type

/** The stored secret: its value only ever sealed, with the id of the key that sealed it. */
export interface SecretRow {
  readonly projectId: ProjectId
  readonly name: string
  readonly version: number
  readonly sealed: Sealed
  readonly updatedAt: string
}

/** A secret opened for the runtime; the value stays redacted in logs and traces. */
export interface OpenedSecret {
  readonly name: string
  readonly version: number
  readonly value: Redacted.Redacted<string>
}
