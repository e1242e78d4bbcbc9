import { assert, layer } from "@effect/vitest"
import { Identity } from "@hostplane/core/identity/Identity"
import { AuditLog } from "@hostplane/core/kernel/Audit"
import { MailTransport, type MailMessage } from "@hostplane/core/mail/Mail"
import { JobRunner } from "@hostplane/core/jobs/JobRunner"
import { sendMailHandler } from "@hostplane/core/mail/SendMail"
import { Invites } from "@hostplane/core/orgs/Invites"
import { Orgs } from "@hostplane/core/orgs/Orgs"
import { Effect, Layer } from "effect"
import { coreOnPostgres } from "./support/coreOnPostgres.ts"

const delivered: Array<MailMessage> = []
const recordingTransport = Layer.succeed(MailTransport, {
  send: (message) => Effect.sync(() => void delivered.push(message)),
  sendRaw: (message) => Effect.succeed(message.id)
})

const live = recordingTransport.pipe(Layer.provideMerge(coreOnPostgres()))

const signIn = Effect.fnUntraced(function* (subject: string) {
  const identity = yield* Identity
  const session = yield* identity.devLogin({ subject: `${subject}-${crypto.randomUUID()}`, name: subject })
  return yield* identity.authenticate(session.token)
})

layer(live, { excludeTestServices: true })("core services on PostgreSQL", (it) => {
  it.effect("the first sign-in creates the user and a personal org; the same subject signs in as the same user", () =>
    Effect.gen(function* () {
      const identity = yield* Identity
      const subject = `alice-${crypto.randomUUID()}`
      const first = yield* identity.devLogin({ subject, name: "Alice" })
      const again = yield* identity.devLogin({ subject, email: "alice@example.test" })
      assert.strictEqual(again.userId, first.userId)
      const me = yield* identity.me(yield* identity.authenticate(again.token))
      assert.strictEqual(me.user.email, "alice@example.test")
      assert.deepStrictEqual(
        me.orgs.map((org) => [org.personal, org.role]),
        [[true, "admin"]]
      )
    })
  )

  it.effect("a derived slug that is taken gets a suffix inside the same transaction", () =>
    Effect.gen(function* () {
      const orgs = yield* Orgs
      const actor = yield* signIn("bob")
      const name = `Team ${crypto.randomUUID().slice(0, 8)}`
      const first = yield* orgs.create(actor, { name })
      const second = yield* orgs.create(actor, { name })
      assert.notStrictEqual(second.slug, first.slug)
      assert.isTrue(second.slug.startsWith(first.slug))
    })
  )

  it.effect("an invite is sent through the outbox, gets sentAt, is accepted; deleting the org keeps its audit", () =>
    Effect.gen(function* () {
      const orgs = yield* Orgs
      const invites = yield* Invites
      const audit = yield* AuditLog
      const admin = yield* signIn("carol")
      const guest = yield* signIn("dave")
      const org = yield* orgs.create(admin, { name: "Invites" })
      const { invite } = yield* invites.create(admin, org.slug, { email: "dave@example.test", role: "member" })
      assert.strictEqual(invite.sentAt, null)

      yield* JobRunner.runOnce([sendMailHandler()])
      const [listed] = yield* invites.list(admin, org.slug)
      assert.isString(listed?.sentAt)
      const mail = delivered.find((message) => message.to === "dave@example.test")
      const token = /\/invites\/([A-Za-z0-9_-]+)/.exec(mail?.text ?? "")?.[1] ?? ""

      const accepted = yield* invites.accept(guest, token)
      assert.deepStrictEqual(
        [accepted.org.slug, accepted.org.role, accepted.alreadyMember],
        [org.slug, "member", false]
      )
      assert.deepStrictEqual(yield* invites.list(admin, org.slug), [])

      yield* orgs.remove(admin, org.slug, org.slug)
      const actions = (yield* audit.list({ action: "org.delete" })).filter((event) => event.target === org.slug)
      assert.strictEqual(actions.length, 1)
    })
  )
})
