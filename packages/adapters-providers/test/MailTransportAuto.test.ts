import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { MailTransportAuto } from "@hostplane/adapters-providers"
import { Mail } from "@hostplane/core"
import { FakeSmtpServer } from "@hostplane/testkit"
import { ConfigProvider, Effect } from "effect"
import { tempDir } from "./support/TempFiles.ts"

const message: Mail.MailMessage = {
  id: "mail_auto0001",
  from: "hostplane <no-reply@localhost>",
  to: "zoe@example.com",
  subject: "Hello",
  text: "Hi.\n"
}

const sendWith = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const transport = yield* Mail.MailTransport
    yield* transport.send(message)
  }).pipe(
    Effect.provide(MailTransportAuto.layerConfig),
    Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
  )

const exists = (path: string) =>
  Effect.promise(() =>
    Fs.access(path).then(
      () => true,
      () => false
    )
  )

describe("MailTransportAuto", () => {
  it.effect("with no mail provider configured, mail is written to <data dir>/outbox as .eml", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("auto")
      yield* sendWith({ SERVICE_DATA_DIR: dataDir })
      assert.isTrue(yield* exists(Path.join(dataDir, "outbox", "mail_auto0001.eml")))
    })
  )

  it.effect("an empty SERVICE_SMTP_URL counts as unset", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("auto")
      yield* sendWith({ SERVICE_DATA_DIR: dataDir, SERVICE_SMTP_URL: "  " })
      assert.isTrue(yield* exists(Path.join(dataDir, "outbox", "mail_auto0001.eml")))
    })
  )

  it.effect("with SERVICE_SMTP_URL set, mail goes over SMTP and no outbox folder appears", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("auto")
      const server = yield* FakeSmtpServer.make({ auth: { user: "mailer", pass: "pw-123456" } })
      yield* sendWith({ SERVICE_DATA_DIR: dataDir, SERVICE_SMTP_URL: server.url })
      const received = yield* server.received
      assert.lengthOf(received, 1)
      assert.deepStrictEqual(received[0]?.to, ["zoe@example.com"])
      assert.isFalse(yield* exists(Path.join(dataDir, "outbox")))
    })
  )
})
