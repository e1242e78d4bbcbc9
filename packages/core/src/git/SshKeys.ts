import { Context, Effect, Layer, Option } from "effect"
import { BadRequest, GitUnavailable, NotFound, type SshKeyExists } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { makeId, newId, type UserId } from "../kernel/Ids.ts"
import { portOn } from "../kernel/Port.ts"
import { nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import type { AddSshKeyInput, SshKey, SshKeyRow } from "./Credentials.ts"
import { withoutControlCharacters } from "../orgs/Org.ts"
import { CredentialStore } from "./CredentialStore.ts"
import { SshKeyParser } from "./SshKeyParser.ts"

const toSshKey = (row: SshKeyRow): SshKey => ({
  id: row.id,
  title: row.title,
  type: row.type,
  fingerprint: row.fingerprint,
  createdAt: row.createdAt
})

/**
 * SSH keys of spec 4.12: parsed by a real key parser, fingerprints (`SHA256:...`, as `ssh-keygen -lf` prints them)
 * unique across all users, looked up at every SSH sign-in so a deletion takes effect at once.
 */
export class SshKeys extends Context.Service<
  SshKeys,
  {
    readonly list: (actor: Actor) => Effect.Effect<ReadonlyArray<SshKey>>
    /** Without a key parser (a host that provides none) it is 503 `git_unavailable`. */
    readonly add: (
      actor: Actor,
      input: AddSshKeyInput
    ) => Effect.Effect<SshKey, BadRequest | SshKeyExists | GitUnavailable>
    readonly remove: (actor: Actor, keyId: string) => Effect.Effect<void, NotFound>
    /** The user a registered key belongs to. */
    readonly ownerOf: (fingerprint: string) => Effect.Effect<Option.Option<UserId>>
  }
>()("@hostplane/core/git/SshKeys") {
  static readonly layer = Layer.effect(
    SshKeys,
    Effect.gen(function* () {
      const store = yield* CredentialStore
      const parser = portOn(yield* SshKeyParser)
      const tokens = yield* Tokens

      const list = Effect.fn("SshKeys.list")(function* (actor: Actor) {
        return (yield* store.listKeys(actor.userId)).map(toSshKey)
      })

      const add = Effect.fn("SshKeys.add")(function* (actor: Actor, input: AddSshKeyInput) {
        if (Option.isNone(parser)) {
          return yield* new GitUnavailable({ message: "this deployment has no SSH key parser" })
        }
        const parsed = yield* parser.value
          .parse(input.publicKey)
          .pipe(Effect.mapError((refused) => new BadRequest({ message: refused.message })))
        const title = (input.title ?? "").trim() || withoutControlCharacters(parsed.comment) || parsed.type
        const row: SshKeyRow = {
          id: yield* newId(tokens, "key"),
          userId: actor.userId,
          title,
          type: parsed.type,
          fingerprint: parsed.fingerprint,
          publicKey: parsed.line,
          createdAt: yield* nowIso
        }
        yield* store.insertKey(row)
        return toSshKey(row)
      })

      const remove = Effect.fn("SshKeys.remove")(function* (actor: Actor, keyId: string) {
        if (!(yield* store.removeKey(actor.userId, makeId("key", keyId)))) {
          return yield* new NotFound({ message: `key ${keyId} not found` })
        }
      })

      const ownerOf = Effect.fn("SshKeys.ownerOf")(function* (fingerprint: string) {
        return Option.map(yield* store.findKeyByFingerprint(fingerprint), (row) => row.userId)
      })

      return SshKeys.of({ list, add, remove, ownerOf })
    })
  )
}
