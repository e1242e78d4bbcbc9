import { Context, Effect, Layer, Redacted } from "effect"
import { secretsRules } from "./SecretsRules.ts"
import { BadRequest, type Forbidden, NotFound, type OpInFlight, ReservedName } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import {
  isReservedSecretName,
  type OpenedSecret,
  secretNamePattern,
  type SecretMeta,
  secretValueProblem
} from "./Secret.ts"
import { Sealer, secretContext } from "./Sealer.ts"
import { SecretStore } from "./SecretStore.ts"
import type { ProjectId } from "../kernel/Ids.ts"

/**
 * Project secrets of spec 4.5: values are sealed before they are stored and never leave through the API, an audit row
 * or a log; every put raises the version. Only `open` (for the runtime, not exposed over HTTP) reads them back.
 */
export class Secrets extends Context.Service<
  Secrets,
  {
    readonly list: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<ReadonlyArray<SecretMeta>, NotFound | Forbidden>
    /**
     * Creates or replaces the secret; a bad name is 400 `bad_request`, a reserved one 400 `reserved_name`. Like every
     * project write, it is 409 `op_in_flight` once the project's delete is accepted.
     */
    readonly put: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      secretName: string,
      value: Redacted.Redacted<string>
    ) => Effect.Effect<SecretMeta, NotFound | Forbidden | BadRequest | ReservedName | OpInFlight>
    readonly remove: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      secretName: string
    ) => Effect.Effect<void, NotFound | Forbidden | OpInFlight>
    /**
     * Every secret of the project, opened, by name: the environment the runtime gives the project's worker. A value
     * that no longer opens (a key missing from the ring, altered data) is a defect, never a silently empty secret.
     */
    readonly open: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<OpenedSecret>>
  }
>()("@hostplane/core/secrets/Secrets") {
  static readonly layer = Layer.effect(
    Secrets,
    Effect.gen(function* () {
      const store = yield* SecretStore
      const sealer = yield* Sealer
      const policy = yield* Policy
      const mutation = yield* Mutation

      const list = Effect.fn("Secrets.list")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, secretsRules.list)
        return yield* store.list(project.id)
      })

      // Untraced: the hottest write (`npm run bench`'s secret put); a span per put cost more than its checks.
      const put = Effect.fnUntraced(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        secretName: string,
        value: Redacted.Redacted<string>
      ) {
        // Authorization (404, 403), then the input (400), then the project's state (409 `op_in_flight`, refused by the
        // statement's guard): decisions.md part 12's order, so a bad name is 400 on a project being deleted too.
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, secretsRules.put)
        if (!secretNamePattern.test(secretName)) {
          return yield* new BadRequest({
            message: "a secret name is a letter or underscore followed by up to 127 letters, digits or underscores",
            details: { pattern: secretNamePattern.source }
          })
        }
        if (isReservedSecretName(secretName)) {
          return yield* new ReservedName({
            message: `${secretName} is reserved: DB, ASSETS and names starting SERVICE_ (in any case) belong to the service`
          })
        }
        const problem = secretValueProblem(Redacted.value(value))
        if (problem !== undefined) return yield* new BadRequest({ message: `the secret value ${problem}` })
        const sealed = yield* sealer.seal(Redacted.value(value), secretContext(grant.project.id, secretName))
        // One statement: the org lock, the rechecks, the upsert, its audit row and the revision raise.
        return yield* mutation.projectStatement(
          grant,
          ({ project, at, finish }) =>
            store.put(
              project.id,
              secretName,
              sealed,
              at,
              finish({ action: "secret.set", target: project.id, data: { name: secretName } })
            ),
          { node: true }
        )
      })

      const remove = Effect.fn("Secrets.remove")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        secretName: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, secretsRules.remove)
        yield* mutation.project(
          grant,
          ({ project }) =>
            Effect.gen(function* () {
              if (!(yield* store.remove(project.id, secretName))) {
                return yield* new NotFound({ message: `secret ${secretName} not found` })
              }
              return audited(undefined, { action: "secret.delete", target: project.id, data: { name: secretName } })
            }),
          { node: true }
        )
      })

      const open = Effect.fn("Secrets.open")(function* (projectId: ProjectId) {
        const rows = yield* store.listSealed(projectId)
        return yield* Effect.forEach(rows, (row) =>
          sealer.open(row.sealed, secretContext(projectId, row.name)).pipe(
            Effect.map((plain): OpenedSecret => ({
              name: row.name,
              version: row.version,
              value: Redacted.make(plain)
            })),
            Effect.orDie
          )
        )
      })

      return Secrets.of({ list, put, remove, open })
    })
  )
}
